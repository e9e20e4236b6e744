package plugin

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/steer"
)

// pinner chooses the GPU of single-GPU shard jobs when gpumem.conf says ShardTypes =
// per-gpu: on the inventory, plus the usage snapshot gpumemctl steer writes, plus the
// pins it made itself since that snapshot, it places the job with PinPolicy and pins it
// there (shard:<gpu type>:N, the node as required node). Without a fresh snapshot, or
// when the job fits nowhere now, it pins nothing and Slurm places the job as it would
// without gpumem. Like source, it runs under slurmctld's job write lock, one job at a
// time, and does nothing that blocks: one stat per job, a read when the file changed.
type pinner struct {
	path    string
	maxAge  time.Duration
	policy  string
	unitMiB int64
	target  []int64 // target sizes in shards when the snapshot names none

	// types are the shard types slurm.conf gives each node; nil when slurm.conf could
	// not be read. A pin to a type Slurm does not know would make Slurm refuse the job.
	types map[string]map[string]bool

	sig  string // the snapshot file as last read
	snap *steer.Snapshot
	bad  error // why the snapshot as last read is unusable
	pins []pin // made since snap.Taken
}

type pin struct {
	node   string
	gpu    int
	shards int64
	at     time.Time
}

func newPinner(cfg config.Config) (*pinner, error) {
	sizes := cfg.TargetSizesMiB
	if len(sizes) == 0 {
		sizes = admit.DefaultTargetSizesMiB
	}
	pn := &pinner{path: cfg.UsageSnapshot, maxAge: cfg.UsageMaxAge, policy: cfg.PinPolicy, unitMiB: cfg.ShardUnitMiB}
	for _, z := range sizes {
		pn.target = append(pn.target, shard.For(z, cfg.ShardUnitMiB))
	}
	if _, err := pn.makePolicy(pn.target); err != nil {
		return nil, fmt.Errorf("PinPolicy: %w", err)
	}
	return pn, nil
}

func (pn *pinner) makePolicy(sizes []int64) (placement.Policy, error) {
	shapes, err := placement.ShapesOfSizes(sizes)
	if err != nil {
		return nil, err
	}
	return placement.ByName(pn.policy, 1, shapes...)
}

// shardJobRe is the one request gpumem pins: N untyped shards per node, nothing else.
var shardJobRe = regexp.MustCompile(`^(gres[:/])?shard:(\d+)$`)

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
	m := shardJobRe.FindStringSubmatch(f.PerNode)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return m[1], n, true
}

// refresh re-reads the snapshot when its file changed. It returns an error once per
// change of the file that makes it unusable, for the log.
func (pn *pinner) refresh() error {
	sig, err := signature(pn.path)
	if err != nil {
		sig = "error: " + err.Error()
	}
	if sig == pn.sig {
		return nil
	}
	pn.sig, pn.snap, pn.bad = sig, nil, nil
	if errors.Is(err, os.ErrNotExist) {
		return nil // steering is not running (yet): no pins, nothing to log each time
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(pn.path)
	}
	if err == nil {
		var s steer.Snapshot
		if s, err = steer.DecodeSnapshot(b); err == nil {
			pn.snap = &s
			return nil
		}
	}
	pn.bad = fmt.Errorf("usage snapshot %s: %w; shard jobs are not pinned until it is good", pn.path, err)
	return pn.bad
}

// choose returns the node and shard type a job of shards goes to, and commits it, or
// says why it is not pinned. parts are the partitions it may use (empty: any).
func (pn *pinner) choose(inv inventory.Cluster, shards int64, parts []string, now time.Time) (node, typ string, err error) {
	if pn.snap == nil {
		if pn.bad != nil {
			return "", "", pn.bad
		}
		return "", "", fmt.Errorf("no usage snapshot at %s", pn.path)
	}
	if age := now.Sub(pn.snap.Taken); age > pn.maxAge {
		return "", "", fmt.Errorf("usage snapshot %s is %s old, more than UsageMaxAge %s", pn.path, age.Round(time.Second), pn.maxAge)
	}
	kept := pn.pins[:0]
	for _, p := range pn.pins {
		if p.at.After(pn.snap.Taken) {
			kept = append(kept, p)
		}
	}
	pn.pins = kept
	cl := steer.NewCluster(inv, func(mib int64) int64 { return shard.PerGPU(mib, pn.unitMiB) })
	for _, u := range pn.snap.GPUs {
		_ = cl.Take(u.Node, u.GPU, u.Shards) // a GPU gone from the inventory holds no job we could place
	}
	for _, p := range pn.pins {
		_ = cl.Take(p.node, p.gpu, p.shards)
	}
	cl.State.Reindex()
	sizes := pn.snap.Sizes
	if len(sizes) == 0 {
		sizes = pn.target
	}
	pol, err := pn.makePolicy(sizes)
	if err != nil {
		return "", "", err
	}
	d := placement.Demand{GPUs: 1, Units: shards, Kinds: placement.Shard, Pools: parts}
	c, ok := pol.Place(cl.State, &d)
	if !ok || len(c.Devices) != 1 {
		return "", "", fmt.Errorf("%d shards fit on no GPU now", shards)
	}
	nd := cl.State.Nodes[c.Node]
	dv := nd.Devices[c.Devices[0]]
	typ = shard.TypeName(dv.Model, dv.GPU)
	if pn.types != nil && !pn.types[nd.Name][typ] {
		return "", "", fmt.Errorf("slurm.conf gives node %s no shard:%s (its Gres= must come from a gres.conf written with ShardTypes = per-gpu)", nd.Name, typ)
	}
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
		for _, e := range strings.Split(n.Get("gres"), ",") {
			if f := strings.Split(e, ":"); len(f) == 3 && f[0] == "shard" {
				out[n.Name][f[1]] = true
			}
		}
	}
	return out, nil
}

// SubmitPinned is Submit for job_submit: a job that ends as N untyped shards on one
// GPU is then pinned to the GPU PinPolicy chooses, when gpumem.conf says ShardTypes =
// per-gpu. Its verdict is never reused (Fresh 0): it depends on what runs now.
func (p *Plugin) SubmitPinned(f Fields) (v Verdict) {
	v = p.Submit(f)
	if p.pins == nil || v.Refusal != "" {
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
	if err := p.pins.refresh(); err != nil {
		p.log.errorf("%v", err)
	}
	p.reload()
	if p.src.cluster == nil {
		return v
	}
	parts := p.defParts
	if v.Fields.Partition != "" {
		parts = strings.Split(v.Fields.Partition, ",")
	}
	node, typ, err := p.pins.choose(*p.src.cluster, shards, parts, p.now())
	if err != nil {
		p.log.verbosef("not pinned (%s): %v", v.Fields.PerNode, err)
		return v
	}
	v.Fields.PerNode = fmt.Sprintf("%sshard:%s:%d", prefix, typ, shards)
	v.Fields.ReqNodes = node
	p.log.verbosef("pinned %s to %s on %s", f.PerNode, v.Fields.PerNode, node)
	return v
}

// startPinning makes the pinner when gpumem.conf asks for it (job_submit only: clients
// never pin, so they never pay for it).
func (p *Plugin) startPinning() {
	if p.cfg.ShardTypes != config.ShardTypesPerGPU {
		return
	}
	pn, err := newPinner(p.cfg)
	if err != nil {
		p.log.errorf("%v; shard jobs are not pinned", err)
		return
	}
	if pn.types, err = shardTypes(p.cfg.SlurmConf); err != nil {
		p.log.errorf("slurm.conf %s: %v; shard types are not checked before pinning", p.cfg.SlurmConf, err)
	}
	p.pins = pn
}

// Pins reports whether job_submit pins shard jobs (ShardTypes = per-gpu, with a usable
// PinPolicy): the shim then sends shard jobs to Go, not only gpu:mem ones.
func (p *Plugin) Pins() bool { return p.pins != nil }
