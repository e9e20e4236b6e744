package admit

import "github.com/gpumem/gpumem/internal/placement"

// Usage is what runs now as far as gpumem knows: the shards taken on each shared GPU (a
// GPU given whole counts all of them), by node name and NVML index. Admission without
// one counts every device free.
//
// A Usage made by an Admitter's NewUsage and changed only through Add also keeps its use
// summed per partition and node group, so that an admission costs the number of distinct
// GPU states, not the number of busy nodes: slurmctld admits every job with it. One
// filled in by hand (Shards only) is read node by node, which tests and tools may do.
type Usage struct {
	Shards map[string]map[int]int64
	ix     *usageIndex
}

// usageIndex is Usage summed for one Admitter: per partition and node group, the busy
// shared GPUs by (shard MiB, MiB left) and, per whole-GPU type, the nodes by how many of
// those GPUs are busy. Nodes with nothing taken are in neither.
type usageIndex struct {
	a     *Admitter
	parts map[*partition]map[*group]*busy
}

type busy struct {
	gpus  map[[2]int64]int64         // {shard MiB of the GPU, MiB left} -> GPUs
	whole map[string]map[int64]int64 // whole-GPU type -> GPUs of it busy on a node -> nodes
}

// NewUsage returns an empty usage view indexed for a.
func (a *Admitter) NewUsage() *Usage {
	return &Usage{Shards: map[string]map[int]int64{}, ix: &usageIndex{a: a, parts: map[*partition]map[*group]*busy{}}}
}

// Add records shards more taken on a node's GPU. It costs the node's GPUs times its
// partitions.
func (u *Usage) Add(node string, gpu int, shards int64) {
	m := u.Shards[node]
	if m == nil {
		m = map[int]int64{}
		u.Shards[node] = m
	}
	if u.ix != nil {
		u.ix.count(node, m, -1)
	}
	m[gpu] += shards
	if u.ix != nil {
		u.ix.count(node, m, +1)
	}
}

// count adds (sign +1) or removes (-1) a node's use with taken as it stands.
func (ix *usageIndex) count(node string, taken map[int]int64, sign int64) {
	ref, ok := ix.a.ix.nodes[node]
	if !ok || len(taken) == 0 {
		return
	}
	c, unit := ref.g.cfg, ix.a.opt.ShardUnitMiB
	for _, p := range ix.a.ix.parts {
		if !p.nodes[node] {
			continue
		}
		gs := ix.parts[p]
		if gs == nil {
			gs = map[*group]*busy{}
			ix.parts[p] = gs
		}
		b := gs[ref.g]
		if b == nil {
			b = &busy{gpus: map[[2]int64]int64{}, whole: map[string]map[int64]int64{}}
			gs[ref.g] = b
		}
		for i, s := range c.shards {
			if t := taken[c.shardGPU[i]]; t > 0 {
				k := [2]int64{s, s - t*unit}
				if b.gpus[k] += sign; b.gpus[k] == 0 {
					delete(b.gpus, k)
				}
			}
		}
		for i := range c.units {
			w := &c.units[i]
			if w.kind != placement.Whole {
				continue
			}
			var n int64
			for _, g := range w.gpus {
				if taken[g] > 0 {
					n++
				}
			}
			if n == 0 {
				continue
			}
			h := b.whole[w.name]
			if h == nil {
				h = map[int64]int64{}
				b.whole[w.name] = h
			}
			if h[n] += sign; h[n] == 0 {
				delete(h, n)
			}
		}
	}
}

// lost is the slots the usage view takes from the usable nodes of p.
func (a *Admitter) lost(q *ask, sh *shape, p *partition, o *option, use *Usage) int64 {
	if use.ix == nil || use.ix.a != a.root() {
		return a.lostByNode(q, sh, p, o, use)
	}
	var l int64
	for g, b := range use.ix.parts[p] {
		if sh.usable(g.features) {
			l += b.lost(q, g.cfg, o)
		}
	}
	// An excluded node was summed with its group: give back what it lost.
	for name := range sh.exc {
		ref, ok := a.ix.nodes[name]
		if taken := use.Shards[name]; ok && len(taken) > 0 && p.nodes[name] && sh.usable(ref.g.features) {
			l -= a.nodeLost(q, ref.g.cfg, o, taken)
		}
	}
	return l
}

// lost is what the busy GPUs of one group cost o, by the same arithmetic as slots.
func (b *busy) lost(q *ask, c *config, o *option) int64 {
	var l int64
	switch o.kind {
	case placement.Shard:
		for k, n := range b.gpus {
			l += n * (k[0]/o.mib - max(k[1], 0)/o.mib)
		}
	case placement.Whole:
		w := c.find(o.kind, o.name)
		if w == nil {
			return 0
		}
		all := int64(w.count)
		for busyGPUs, n := range b.whole[o.name] {
			if q.perJob {
				l += n * busyGPUs
			} else {
				l += n * (all/q.gpus - (all-busyGPUs)/q.gpus)
			}
		}
	}
	return l
}

// lostByNode is lost for a Usage without an index: node by node.
func (a *Admitter) lostByNode(q *ask, sh *shape, p *partition, o *option, use *Usage) int64 {
	var l int64
	for name, taken := range use.Shards {
		ref, ok := a.ix.nodes[name]
		if !ok || !p.nodes[name] || sh.exc[name] || !sh.usable(ref.g.features) {
			continue
		}
		l += a.nodeLost(q, ref.g.cfg, o, taken)
	}
	return l
}

func (a *Admitter) nodeLost(q *ask, c *config, o *option, taken map[int]int64) int64 {
	full, _ := a.slots(q, c, o, nil)
	now, _ := a.slots(q, c, o, taken)
	return full - now
}
