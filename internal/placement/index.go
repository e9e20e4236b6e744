package placement

import (
	"math"
	"math/bits"
)

// summary bounds what one node, or every node of a subtree, can offer, so that a policy
// skips whole subtrees that cannot take a demand or cannot beat the best node found.
type summary struct {
	cpu, mem             int64   // most free CPU and host memory
	shard, mig, whole    int64   // most free units on one device, by kind
	shardN, migN, wholeN int     // most devices of each kind free on one node
	lo, hi               float64 // least and most leftover share before placing
	minInvCPU, maxInv    float64 // 1/CPU capacity bounds (0 for a node without CPU count)
	minInvCap, maxInvC   float64 // 1/GPU capacity bounds (0 for a node without devices)
	devShare             float64 // most any one device holds of its node's GPU capacity
	// Least leftover share among the nodes that could take a demand of a kind, so that
	// full nodes do not weaken best-fit's bound for the demands they cannot take: by the
	// bit length of the node's largest free shard space, and by its count of free MIG
	// instances or idle full GPUs.
	loShard        [shardBuckets]float64
	loMIG, loWhole [countBuckets]float64
}

const (
	shardBuckets = 24 // bit lengths 0..23; larger free spaces share the last bucket
	countBuckets = 9  // 0..8 devices; more share the last bucket
)

// emptySummary stands for no node: it fits nothing and bounds nothing.
func emptySummary() summary {
	sm := summary{cpu: -1, mem: -1, shard: -1, mig: -1, whole: -1, shardN: -1, migN: -1, wholeN: -1,
		lo: math.Inf(1), hi: math.Inf(-1), minInvCPU: math.Inf(1), minInvCap: math.Inf(1)}
	for i := range sm.loShard {
		sm.loShard[i] = math.Inf(1)
	}
	for i := range sm.loMIG {
		sm.loMIG[i], sm.loWhole[i] = math.Inf(1), math.Inf(1)
	}
	return sm
}

// index is a segment tree of node summaries in node order. Commit and Release keep it
// current; it is rebuilt whenever the node count changed under it.
type index struct {
	size int // leaves, a power of two
	n    int // nodes indexed
	sum  []summary
}

// idx returns the current index, building it on first use.
func (s *State) index() *index {
	if s.idx == nil || s.idx.n != len(s.Nodes) {
		s.Reindex()
	}
	return s.idx
}

// Reindex rebuilds the index from scratch; call it after changing Nodes other than
// through Commit and Release.
func (s *State) Reindex() {
	x := &index{size: 1, n: len(s.Nodes)}
	for x.size < x.n {
		x.size *= 2
	}
	x.sum = make([]summary, 2*x.size)
	for i := range x.sum {
		x.sum[i] = emptySummary()
	}
	for n := range s.Nodes {
		x.sum[x.size+n] = summarize(&s.Nodes[n])
	}
	for t := x.size - 1; t >= 1; t-- {
		x.sum[t] = joinSummaries(&x.sum[2*t], &x.sum[2*t+1])
	}
	s.idx = x
}

// touch refreshes node n's path to the root after its allocation changed.
func (s *State) touch(n int) {
	if s.idx == nil || s.idx.n != len(s.Nodes) {
		return // built lazily, from the then current state
	}
	x := s.idx
	t := x.size + n
	x.sum[t] = summarize(&s.Nodes[n])
	for t /= 2; t >= 1; t /= 2 {
		x.sum[t] = joinSummaries(&x.sum[2*t], &x.sum[2*t+1])
	}
}

func summarize(nd *Node) summary {
	sm := emptySummary()
	sm.cpu, sm.mem, sm.shardN, sm.migN, sm.wholeN = nd.CPU-nd.UsedCPU, nd.Mem-nd.UsedMem, 0, 0, 0
	var capacity, free, biggest int64
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		capacity += dv.Capacity
		biggest = max(biggest, dv.Capacity)
		free += dv.Free()
		switch {
		case dv.Whole:
		case dv.Profile != "":
			sm.mig = max(sm.mig, dv.Capacity)
			sm.migN++
		default:
			if dv.Shareable && dv.Free() > 0 {
				sm.shard = max(sm.shard, dv.Free())
				sm.shardN++
			}
			if dv.Used == 0 {
				sm.whole = max(sm.whole, dv.Capacity)
				sm.wholeN++
			}
		}
	}
	if nd.CPU > 0 {
		sm.minInvCPU = 1 / float64(nd.CPU)
	}
	if capacity > 0 {
		sm.minInvCap = 1 / float64(capacity)
		sm.devShare = float64(biggest) / float64(capacity)
	}
	if nd.CPU <= 0 {
		sm.minInvCPU = 0
	}
	if capacity <= 0 {
		sm.minInvCap = 0
	}
	sm.maxInv, sm.maxInvC = sm.minInvCPU, sm.minInvCap
	sm.lo = leftover(nd.CPU, nd.CPU-nd.UsedCPU, capacity, free)
	sm.hi = sm.lo
	if sm.shardN > 0 {
		sm.loShard[shardBucket(sm.shard)] = sm.lo
	}
	sm.loMIG[min(sm.migN, countBuckets-1)] = sm.lo
	sm.loWhole[min(sm.wholeN, countBuckets-1)] = sm.lo
	return sm
}

func shardBucket(units int64) int { return min(bits.Len64(uint64(max(units, 0))), shardBuckets-1) }

// leastFrom is the least of lo[from:], the nodes with at least that bucket.
func leastFrom(lo []float64, from int) float64 {
	m := math.Inf(1)
	for _, v := range lo[min(from, len(lo)-1):] {
		m = min(m, v)
	}
	return m
}

func joinSummaries(a, b *summary) summary {
	sm := summary{
		cpu: max(a.cpu, b.cpu), mem: max(a.mem, b.mem),
		shard: max(a.shard, b.shard), mig: max(a.mig, b.mig), whole: max(a.whole, b.whole),
		shardN: max(a.shardN, b.shardN), migN: max(a.migN, b.migN), wholeN: max(a.wholeN, b.wholeN),
		lo: min(a.lo, b.lo), hi: max(a.hi, b.hi),
		minInvCPU: min(a.minInvCPU, b.minInvCPU), maxInv: max(a.maxInv, b.maxInv),
		minInvCap: min(a.minInvCap, b.minInvCap), maxInvC: max(a.maxInvC, b.maxInvC),
		devShare: max(a.devShare, b.devShare),
	}
	for i := range sm.loShard {
		sm.loShard[i] = min(a.loShard[i], b.loShard[i])
	}
	for i := range sm.loMIG {
		sm.loMIG[i], sm.loWhole[i] = min(a.loMIG[i], b.loMIG[i]), min(a.loWhole[i], b.loWhole[i])
	}
	return sm
}

// leftover is the best-fit score: half the free CPU share plus half the free GPU share.
func leftover(cpu, freeCPU, capacity, free int64) float64 {
	var c, g float64
	if cpu > 0 {
		c = float64(freeCPU) / float64(cpu)
	}
	if capacity > 0 {
		g = float64(free) / float64(capacity)
	}
	return 0.5*c + 0.5*g
}

// mayFit is a necessary condition for d somewhere under sm: enough CPU, host memory and,
// for a GPU demand, one device of an allowed kind with enough units.
func (sm *summary) mayFit(d *Demand) bool {
	if sm.cpu < d.CPU || sm.mem < d.Mem {
		return false
	}
	if d.GPUs == 0 {
		return true
	}
	k := d.kinds()
	return k&Shard != 0 && sm.shard >= d.Units && sm.shardN >= d.GPUs ||
		k&MIG != 0 && sm.mig >= d.Units && sm.migN >= d.GPUs ||
		k&Whole != 0 && sm.whole >= d.Units && sm.wholeN >= d.GPUs
}

// bound is the least (tight) or most (!tight) leftover any node under sm can have after
// taking d: the demand's CPU share and GPU units are at most/least what the extreme
// capacities under sm allow.
func (sm *summary) bound(d *Demand, tight bool) float64 {
	gpus := float64(d.GPUs)
	if tight {
		// A shard takes Units of the node's capacity; a MIG instance or full GPU at most
		// the largest device's share of it.
		share := float64(d.Units) * sm.maxInvC
		if d.kinds()&(MIG|Whole) != 0 {
			share = max(share, sm.devShare)
		}
		return sm.least(d) - 0.5*float64(d.CPU)*sm.maxInv - 0.5*gpus*share
	}
	return sm.hi - 0.5*float64(d.CPU)*sm.minInvCPU - 0.5*float64(d.Units)*gpus*sm.minInvCap
}

// least is the least leftover share, before placing, of the nodes under sm that may take d.
func (sm *summary) least(d *Demand) float64 {
	if d.GPUs == 0 {
		return sm.lo
	}
	k, m := d.kinds(), math.Inf(1)
	if k&Shard != 0 {
		m = min(m, leastFrom(sm.loShard[:], shardBucket(d.Units)))
	}
	if k&MIG != 0 {
		m = min(m, leastFrom(sm.loMIG[:], d.GPUs))
	}
	if k&Whole != 0 {
		m = min(m, leastFrom(sm.loWhole[:], d.GPUs))
	}
	return m
}
