package admit

import (
	"errors"
	"slices"
	"sort"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/shard"
)

// refusal explains, in the user's own words, why no native form can serve the request:
// for each partition the job may use, the node or limit at fault and the most that fits
// under the same shape, and which other partitions would take it as it is.
func (a *Admitter) refusal(q *ask, sh *shape, cands []string) error {
	if err := a.fenceRefusal(q, sh, cands); err != nil {
		return err
	}
	reasons := make([]string, len(cands))
	for i, name := range cands {
		reasons[i] = a.why(q, sh, name)
	}
	var elsewhere []string
	for _, name := range a.names {
		if !slices.Contains(cands, name) && a.fits(q, sh, name) {
			elsewhere = append(elsewhere, name)
		}
	}
	return errors.New(refusal.NoFit(q.words(sh), reasons, elsewhere))
}

// words is the request as the user wrote it, in option form.
func (q *ask) words(sh *shape) string {
	return refusal.Asked(q.size, q.gpus, q.perTask, q.perJob, q.model, q.only, sh.words())
}

// why is the reason partition name cannot serve q under sh.
func (a *Admitter) why(q *ask, sh *shape, name string) string {
	p := a.ix.parts[name]
	if p == nil {
		return refusal.PartitionUnknown(name)
	}
	for _, r := range sh.req {
		ref, known := a.ix.nodes[r]
		switch {
		case !known:
			return refusal.NodeUnknown(r)
		case !p.nodes[r]:
			return refusal.NodeNotIn(r, name, a.partitionsOf(r))
		case sh.exc[r]:
			return refusal.NodeRequiredAndExcluded(r)
		case !sh.usable(ref.g.features):
			return refusal.NodeLacksFeatures(r, sh.features)
		}
		if !a.holdsOn(q, ref.g.cfg) {
			return refusal.OnNode(r, a.mostOn(q, ref.g.cfg))
		}
	}
	m, by := a.largestFit(q, sh, p)
	plain := q.shardable() && sh.nodes == 1 && len(sh.exc) == 0 && sh.feat == nil
	switch {
	case m > 0 && plain:
		return refusal.LargestGPU(name, p.largest, p.largestBy, m, by)
	case m > 0:
		var k, n int64
		if k = a.nodesHolding(q, sh, p); sh.nodes > 1 && k > 0 && k < sh.nodes {
			n = a.mostNodes(q, sh, p)
		} else {
			k = 0
		}
		return refusal.MostFits(name, refusal.Count(q.gpus, q.perJob, q.model, sh.nodes), m, by, k, q.size, n)
	case sh.nodes > 1:
		return refusal.FewerNodes(name, sh.nodes, a.nodesHolding(q, sh, p), a.mostNodes(q, sh, p))
	case q.gpus > 1 && q.perJob:
		return refusal.NoGPUsPerJob(name, q.gpus)
	case q.gpus > 1:
		return refusal.NoGPUsPerNode(name, q.gpus)
	case q.model != "":
		return refusal.NoGPUOfType(name, q.model)
	}
	return refusal.NoUsableNode(name)
}

// holdsOn says whether one node of config c can hold q by itself.
func (a *Admitter) holdsOn(q *ask, c *config) bool {
	for _, o := range a.nodeOptions(q, c) {
		if s, _ := a.slots(q, c, &o, nil); s > 0 {
			return true
		}
	}
	return false
}

func (a *Admitter) nodeOptions(q *ask, c *config) []option {
	var out []option
	if q.shardable() {
		n := shard.For(q.mib, a.opt.ShardUnitMiB)
		out = append(out, option{kind: placement.Shard, mib: n * a.opt.ShardUnitMiB})
	}
	for _, u := range c.units {
		if u.mib >= q.mib && (q.model == "" || q.model == u.name) {
			out = append(out, option{kind: u.kind, name: u.name, mib: u.mib})
		}
	}
	return out
}

// mostOn says what one node of config c has and the most it holds for q's count.
func (a *Admitter) mostOn(q *ask, c *config) string {
	var m int64
	by := c.largestBy
	probe := *q
	for _, size := range a.sizes(q, c) {
		probe.mib = size
		if a.holdsOn(&probe, c) {
			m = size
			break
		}
	}
	if m == 0 {
		return refusal.NodeHasNoGPUs(q.gpus, q.model, by, c.largest)
	}
	return refusal.NodeHolds(by, c.largest, m)
}

// sizes is every memory size a device of c offers q (shards or a MIG or GPU type),
// largest first.
func (a *Admitter) sizes(q *ask, c *config) []int64 {
	var out []int64
	if q.shardable() {
		out = append(out, c.shards...)
	}
	for _, u := range c.units {
		if q.model == "" || q.model == u.name {
			out = append(out, u.mib)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

// largestFit is the most memory per GPU that q's count and shape can get in p, with the
// device that gives it.
func (a *Admitter) largestFit(q *ask, sh *shape, p *partition) (int64, string) {
	var cand []int64
	by := map[int64]string{}
	for _, m := range p.members {
		for _, s := range a.sizes(q, m.g.cfg) {
			if _, seen := by[s]; !seen {
				cand = append(cand, s)
				by[s] = a.productOf(m.g.cfg, s)
			}
		}
	}
	sort.Slice(cand, func(i, j int) bool { return cand[i] > cand[j] })
	probe := *q
	ps := []*partition{p}
	for _, size := range cand {
		probe.mib = size
		for _, o := range a.options(&probe, ps, nil) {
			if _, _, ok := a.reachIn(&probe, sh, p, &o, nil); ok {
				return size, by[size]
			}
		}
	}
	return 0, ""
}

// productOf names the device of c that offers size.
func (a *Admitter) productOf(c *config, size int64) string {
	for _, u := range c.units {
		if u.mib == size {
			if u.kind == placement.MIG {
				return refusal.MIGOf(u.name, u.product)
			}
			return u.product
		}
	}
	return refusal.ShardsOf(c.largestBy)
}

// nodesHolding counts the usable nodes of p that can hold q by themselves.
func (a *Admitter) nodesHolding(q *ask, sh *shape, p *partition) int64 {
	var k int64
	for _, m := range p.members {
		if sh.usable(m.g.features) && a.holdsOn(q, m.g.cfg) {
			k += int64(m.n)
		}
	}
	for name := range sh.exc {
		if ref, ok := a.ix.nodes[name]; ok && p.nodes[name] && sh.usable(ref.g.features) && a.holdsOn(q, ref.g.cfg) {
			k--
		}
	}
	return k
}

func (a *Admitter) fits(q *ask, sh *shape, name string) bool {
	p := a.ix.parts[name]
	ps := []*partition{p}
	for _, o := range a.options(q, ps, nil) {
		if _, _, ok := a.reachIn(q, sh, p, &o, nil); ok {
			return true
		}
	}
	return false
}

// hetRefusal: every form that holds the component is on nodes (hosts) the components
// before it may take first.
func (a *Admitter) hetRefusal(q *ask, sh *shape, hosts []string) error {
	sort.Strings(hosts)
	return errors.New(refusal.Het(q.words(sh), slices.Compact(hosts)))
}

// partitionsOf is the partitions node is in, for a refusal that names another.
func (a *Admitter) partitionsOf(node string) []string {
	var in []string
	for _, name := range a.names {
		if a.ix.parts[name].nodes[node] {
			in = append(in, name)
		}
	}
	return in
}

// mostNodes is the most nodes, fewer than the job asked for, on which q fits in p with
// the rest of its shape; 0 when none. More nodes than p has never fit: the search
// starts at p's size, whatever --nodes says.
func (a *Admitter) mostNodes(q *ask, sh *shape, p *partition) int64 {
	probe := *sh
	ps := []*partition{p}
	for k := min(sh.nodes-1, int64(len(p.nodes))); k >= max(int64(len(sh.req)), 1); k-- {
		probe.nodes = k
		for _, o := range a.options(q, ps, nil) {
			if _, _, ok := a.reachIn(q, &probe, p, &o, nil); ok {
				return k
			}
		}
	}
	return 0
}
