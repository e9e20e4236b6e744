package plugin

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/refusalcount"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/slurmgres"
	"github.com/gpumem/gpumem/internal/steer"
)

// Pinning chooses the GPU of single-GPU shard jobs when gpumem.conf says ShardTypes =
// per-gpu: on the inventory, plus the usage snapshot gpumemctl steer writes, plus the
// pins it made itself since that snapshot, it places the job with PinPolicy and pins it
// there (shard:<gpu type>:N, the node as required node). Without a fresh snapshot, or
// when the job fits nowhere now, it pins nothing and Slurm places the job as it would
// without gpumem.
//
// The loader builds a pinBase (placement state of the cluster with the snapshot's use,
// indexed, and the policy) off the submit path whenever the inventory, the snapshot or
// the configuration changes. The pinner adopts it on the first job that sees it and then
// only adds the pins made since the snapshot was taken, so a job costs a placement search
// and one index update, never a pass over the cluster.

// pinBase is the placement state one snapshot gives, made by the loader and handed to the
// pinner, which alone mutates work, under its mutex.
type pinBase struct {
	gen    uint64 // the loader's count: a later base replaces an earlier one, never back
	snap   *steer.Snapshot
	work   *steer.Cluster
	use    *admit.Usage // the snapshot's use plus the pins since, for admission
	policy placement.Policy
	types  map[string]map[string]bool // nil: slurm.conf unread, types not checked
	maxAge time.Duration
	// where finds a GPU again after the base changed: node name -> node index, and the
	// device index of each GPU index on it.
	where map[string]nodeAt
}

type nodeAt struct {
	n   int
	dev map[int]int
}

// newPinBase builds the placement state for pinning, or says why there is none. A policy
// that keeps an index per demand (placement.Ours, an Indexed best fit) gets it built here, off the submit
// path, for the target sizes in the default partitions and for the demands asked lately
// (asked), so that no job pays for a pass over the cluster.
func newPinBase(cfg config.Config, core Core, inv *inventory.Cluster, snap *steer.Snapshot, types map[string]map[string]bool, defParts []string, asked []placement.Demand) (*pinBase, error) {
	sizes := cfg.TargetSizesMiB
	if len(sizes) == 0 {
		sizes = admit.DefaultTargetSizesMiB
	}
	var target []int64
	for _, z := range sizes {
		target = append(target, shard.For(z, cfg.ShardUnitMiB))
	}
	if snap != nil && len(snap.Sizes) > 0 {
		target = snap.Sizes
	}
	policy, err := pinPolicy(cfg.PinPolicy, target)
	if err != nil {
		return nil, fmt.Errorf("PinPolicy: %w", err)
	}
	if inv == nil || snap == nil {
		return nil, nil
	}
	unit := cfg.ShardUnitMiB
	cl := steer.NewCluster(*inv, func(mib int64) int64 { return shard.PerGPU(mib, unit) })
	for _, u := range snap.GPUs {
		_ = cl.Take(u.Node, u.GPU, u.Shards) // a GPU gone from the inventory holds no job we could place
	}
	cl.State.Reindex()
	if p, ok := policy.(interface {
		Prepare(*placement.State, []placement.Demand)
	}); ok {
		ds := append([]placement.Demand(nil), asked...)
		for _, u := range target {
			ds = append(ds, pinDemand(u, defParts))
		}
		p.Prepare(cl.State, ds)
	}
	b := &pinBase{gen: pinGen.Add(1), snap: snap, work: cl, policy: policy, types: types, maxAge: cfg.UsageMaxAge,
		where: map[string]nodeAt{}, use: newUsage(core)}
	for _, u := range snap.GPUs {
		b.addUse(u.Node, u.GPU, u.Shards)
	}
	for n := range cl.State.Nodes {
		nd := &cl.State.Nodes[n]
		at := nodeAt{n: n, dev: map[int]int{}}
		for i, dv := range nd.Devices {
			at.dev[dv.GPU] = i
		}
		b.where[nd.Name] = at
	}
	return b, nil
}

// pinGen numbers pinBases in the order the loader builds them.
var pinGen atomic.Uint64

func (b *pinBase) addUse(node string, gpu int, shards int64) { b.use.Add(node, gpu, shards) }

// newUsage is the usage view admission reads: indexed for core when core is an
// Admitter, so that admitting a job never walks the busy nodes.
func newUsage(core Core) *admit.Usage {
	if a, ok := core.(interface{ NewUsage() *admit.Usage }); ok {
		return a.NewUsage()
	}
	return &admit.Usage{Shards: map[string]map[int]int64{}}
}

// pinPolicies are the policies that may pin inside slurmctld: those whose choice per job
// costs no pass over the cluster (gpumem's index, best fit's and spread's rankings,
// first fit's subtree bounds). fgd, gpu-packing and random score or draw among every
// node on each call, 0.2-5 ms per job at 10,000 nodes, while slurmctld holds its job
// locks; they stay for placement and replays (PlacementPolicy, gpumemctl simulate).
var pinPolicies = []string{placement.OursName, "best-fit", "first-fit", "spread"}

// pinPolicy makes the policy a pinBase places with. Pinning places many alike demands
// on one state, so best fit and spread keep their per-demand rankings (placement.Indexed),
// as gpumem's own policy keeps its index: no pin pays for a search whose cost grows with
// the pins made since the snapshot.
func pinPolicy(name string, sizes []int64) (placement.Policy, error) {
	shapes, err := placement.ShapesOfSizes(sizes)
	if err != nil {
		return nil, err
	}
	p, err := placement.ByName(name, 1, shapes...)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(pinPolicies, name) {
		return nil, fmt.Errorf("%q looks at every node for each job, too slow inside slurmctld's submit path; pinning takes %s", name, strings.Join(pinPolicies, ", "))
	}
	return placement.Indexed(p), nil
}

// pinDemand is the placement demand of a job of shards that may use the partitions
// parts (empty: any).
func pinDemand(shards int64, parts []string) placement.Demand {
	return placement.Demand{GPUs: 1, Units: shards, Kinds: placement.Shard, Pools: parts}
}

// pinner holds the pins made since the adopted base's snapshot, and the base itself.
// Pinning takes mu to write; an admission that reads the usage view takes it to read, so
// alike jobs are admitted in parallel and never see a pin half made.
type pinner struct {
	mu    sync.RWMutex
	base  *pinBase
	pins  []pin
	asked []placement.Demand // the demands pinned lately, distinct, oldest first
}

// maxAsked is how many recent demands the loader indexes ahead for the next base.
const maxAsked = 32

// recent returns the demands pinned lately, for the loader.
func (pn *pinner) recent() []placement.Demand {
	pn.mu.RLock()
	defer pn.mu.RUnlock()
	return slices.Clone(pn.asked)
}

// ask notes d as the latest demand pinned. mu is held for writing.
func (pn *pinner) ask(d placement.Demand) {
	i := slices.IndexFunc(pn.asked, func(e placement.Demand) bool { return e.Units == d.Units && slices.Equal(e.Pools, d.Pools) })
	switch {
	case i >= 0:
		pn.asked = slices.Delete(pn.asked, i, i+1)
	case len(pn.asked) >= maxAsked:
		pn.asked = slices.Delete(pn.asked, 0, 1)
	}
	pn.asked = append(pn.asked, pinDemand(d.Units, slices.Clone(d.Pools)))
}

type pin struct {
	node   string
	gpu    int
	shards int64
	at     time.Time
}

// pinnable returns the prefix and shard count of a job pinning may take, or ok false.
// A pin sends a job to one node of the policy's choosing, which is only right for a
// one-node job that leaves the choice of node to Slurm: one that names, excludes or
// constrains its nodes, spans several, runs in a reservation, is an array (every task
// would follow the one pin) or a hetjob component is left to Slurm.
func pinnable(f Fields) (prefix string, shards int64, ok bool) {
	if f.PerJob != "" || f.PerSocket != "" || f.PerTask != "" || f.ReqNodes != "" ||
		f.ExcNodes != "" || f.Features != "" || f.Reservation != "" || f.ArrayInx != "" ||
		f.MinNodes > 1 || f.MaxNodes > 1 || f.HetJob {
		return "", 0, false
	}
	// The one request gpumem pins: N untyped shards per node, nothing else.
	it, err := slurmgres.Parse(f.PerNode)
	if err != nil || it.Name != slurmgres.Shard || it.Type != "" || !it.Counted || it.Detail != "" || it.Count <= 0 {
		return "", 0, false
	}
	return it.Prefix, it.Count, true
}

// MayPin is the shim's cue: whether job_submit must hand this job to Go even though it
// asks for no GPU memory, because Go may pin it. It is pinnable's test on the fields as
// Slurm holds them.
func MayPin(f Fields) bool {
	_, _, ok := pinnable(f)
	return ok
}

// adopt makes b the base unless a later one is, keeping the pins made after its snapshot
// was taken and applying them to it. mu is held for writing.
func (pn *pinner) adopt(b *pinBase) {
	if pn.base != nil && pn.base.gen >= b.gen {
		return
	}
	pn.base = b
	kept := pn.pins[:0]
	for _, p := range pn.pins {
		if p.at.After(b.snap.Taken) {
			kept = append(kept, p)
			b.take(p.node, p.gpu, p.shards)
		}
	}
	pn.pins = kept
}

// withUsage runs admit with the usage view of st: what the snapshot says runs now plus
// the pins made since, while the snapshot is fresh; nil (every device free) otherwise.
func (pn *pinner) withUsage(st *state, now time.Time, admit func(*admit.Usage)) {
	b := st.pin
	if b == nil || now.Sub(b.snap.Taken) > b.maxAge {
		admit(nil)
		return
	}
	pn.mu.RLock()
	if pn.base == nil || pn.base.gen < b.gen {
		pn.mu.RUnlock()
		pn.mu.Lock()
		pn.adopt(b)
		pn.mu.Unlock()
		pn.mu.RLock()
	}
	defer pn.mu.RUnlock()
	admit(pn.base.use)
}

// take adds shards to a GPU of the base as a commit, which keeps the index current; a
// GPU the base does not have, or one with less room left, takes what it can.
func (b *pinBase) take(node string, gpu int, shards int64) {
	at, ok := b.where[node]
	if !ok {
		return
	}
	i, ok := at.dev[gpu]
	if !ok {
		return
	}
	b.addUse(node, gpu, shards)
	free := b.work.State.Nodes[at.n].Devices[i].Free()
	if n := min(free, shards); n > 0 {
		_ = b.work.State.Commit(placement.Choice{Node: at.n, Devices: []int{i}, Kind: placement.Shard},
			&placement.Demand{GPUs: 1, Units: n, Kinds: placement.Shard})
	}
}

// choose returns the node and shard type a job of shards goes to, and commits it, or
// says why it is not pinned. parts are the partitions it may use (empty: any).
func (pn *pinner) choose(st *state, shards int64, parts []string, now time.Time) (node, typ string, err error) {
	b := st.pin
	if b == nil {
		switch {
		case st.pinErr != nil:
			return "", "", st.pinErr
		case st.usageErr != nil && !errors.Is(st.usageErr, os.ErrNotExist):
			return "", "", st.usageErr
		case st.cluster == nil:
			return "", "", errors.New("no inventory")
		}
		return "", "", fmt.Errorf("no usage snapshot at %s", st.cfg.UsageSnapshot)
	}
	if age := now.Sub(b.snap.Taken); age > b.maxAge {
		return "", "", fmt.Errorf("usage snapshot %s is %s old, more than UsageMaxAge %s", st.cfg.UsageSnapshot, age.Round(time.Second), b.maxAge)
	}
	pn.mu.Lock()
	defer pn.mu.Unlock()
	pn.adopt(b)
	b = pn.base // st's, or a later one
	s := b.work.State
	d := pinDemand(shards, parts)
	pn.ask(d)
	c, ok := b.policy.Place(s, &d)
	if !ok || len(c.Devices) != 1 {
		return "", "", fmt.Errorf("%d shards fit on no GPU now", shards)
	}
	nd := &s.Nodes[c.Node]
	dv := nd.Devices[c.Devices[0]]
	typ = shard.TypeName(dv.Model, dv.GPU)
	if b.types != nil && !b.types[nd.Name][typ] {
		return "", "", fmt.Errorf("slurm.conf gives node %s no %s (its Gres= must come from a gres.conf written with ShardTypes = per-gpu)", nd.Name, slurmgres.Item{Name: slurmgres.Shard, Type: typ})
	}
	if err := s.Commit(c, &d); err != nil {
		return "", "", err
	}
	b.addUse(nd.Name, dv.GPU, shards)
	pn.pins = append(pn.pins, pin{node: nd.Name, gpu: dv.GPU, shards: shards, at: now})
	return nd.Name, typ, nil
}

// shardTypes reads the shard types of every node's Gres= in slurm.conf.
func shardTypes(slurmConf string) (map[string]map[string]bool, error) {
	c, err := slurmconf.ParseFile(slurmConf)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, n := range c.Nodes {
		out[n.Name] = map[string]bool{}
		for _, e := range slurmgres.Split(n.Get("gres")) {
			if it, err := slurmgres.Parse(e); err == nil && it.Name == slurmgres.Shard && it.Type != "" && it.Counted {
				out[n.Name][it.Type] = true
			}
		}
	}
	return out, nil
}

// SubmitPinned is Submit for job_submit: a job that ends as N untyped shards on one
// GPU is then pinned to the GPU PinPolicy chooses, when gpumem.conf says ShardTypes =
// per-gpu. Its verdict is never reused (Fresh 0): it depends on what runs now.
func (p *Plugin) SubmitPinned(f Fields) Verdict {
	if p.followsHet(f) { // a hetjob component is never pinned (pinnable)
		return p.counted(p.submitHet(f))
	}
	return p.counted(p.submitPinned(f))
}

func (p *Plugin) submitPinned(f Fields) (v Verdict) {
	if r := f.scriptRefusal(); r != "" {
		return Verdict{Fields: f, Refusal: r, why: refusalcount.Invalid}
	}
	st := p.current(true)
	v = f.verdict()
	if AsksMem(f) {
		v, _ = p.decide(st, f, nil, false)
	}
	if !p.pinning(st.cfg) || v.Refusal != "" {
		return v
	}
	prefix, shards, ok := pinnable(v.Fields)
	if !ok {
		return v
	}
	v.Fresh = 0
	defer func() {
		if r := recover(); r != nil {
			p.log.errorf("pinning: internal error: %v; job left unpinned", r)
		}
	}()
	parts := st.defParts
	if v.Fields.Partition != "" {
		parts = strings.Split(v.Fields.Partition, ",")
	}
	node, typ, err := p.pins.choose(st, shards, parts, p.now())
	if err != nil {
		p.log.verbosef("not pinned (%s): %v", v.Fields.PerNode, err)
		return v
	}
	pinned := slurmgres.Of(slurmgres.Shard, typ, shards)
	pinned.Prefix = prefix
	v.Fields.PerNode = pinned.String()
	v.Fields.ReqNodes = node
	p.log.verbosef("pinned %s to %s on %s", f.PerNode, v.Fields.PerNode, node)
	return v
}

// verdict is the verdict that leaves a job as it is.
func (f Fields) verdict() Verdict { return Verdict{Fields: f} }

// Pins reports whether job_submit pins shard jobs (ShardTypes = per-gpu, with a usable
// PinPolicy) under the configuration in force.
func (p *Plugin) Pins() bool {
	st := p.current(true)
	return p.pinning(st.cfg) && st.pinErr == nil
}
