package placement

import "math"

// summary bounds what one node, or every node of a subtree, can offer, so that a policy
// skips whole subtrees that cannot take a demand or cannot beat the best node found.
type summary struct {
	cpu, mem           int64   // most free CPU and host memory
	shard, mig, whole  int64   // most free units on one device, by kind
	lo, hi             float64 // least and most leftover share before placing
	minInvCPU, maxInv  float64 // 1/CPU capacity bounds (0 for a node without CPU count)
	minInvCap, maxInvC float64 // 1/GPU capacity bounds (0 for a node without devices)
}

var emptySummary = summary{cpu: -1, mem: -1, shard: -1, mig: -1, whole: -1,
	lo: math.Inf(1), hi: math.Inf(-1), minInvCPU: math.Inf(1), minInvCap: math.Inf(1)}

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
		x.sum[i] = emptySummary
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
	sm := summary{cpu: nd.CPU - nd.UsedCPU, mem: nd.Mem - nd.UsedMem, shard: -1, mig: -1, whole: -1}
	var capacity, free int64
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		capacity += dv.Capacity
		free += dv.Free()
		switch {
		case dv.Whole:
		case dv.Profile != "":
			sm.mig = max(sm.mig, dv.Capacity)
		default:
			if dv.Shareable {
				sm.shard = max(sm.shard, dv.Free())
			}
			if dv.Used == 0 {
				sm.whole = max(sm.whole, dv.Capacity)
			}
		}
	}
	if nd.CPU > 0 {
		sm.minInvCPU = 1 / float64(nd.CPU)
	}
	if capacity > 0 {
		sm.minInvCap = 1 / float64(capacity)
	}
	sm.maxInv, sm.maxInvC = sm.minInvCPU, sm.minInvCap
	sm.lo = leftover(nd.CPU, nd.CPU-nd.UsedCPU, capacity, free)
	sm.hi = sm.lo
	return sm
}

func joinSummaries(a, b *summary) summary {
	return summary{
		cpu: max(a.cpu, b.cpu), mem: max(a.mem, b.mem),
		shard: max(a.shard, b.shard), mig: max(a.mig, b.mig), whole: max(a.whole, b.whole),
		lo: min(a.lo, b.lo), hi: max(a.hi, b.hi),
		minInvCPU: min(a.minInvCPU, b.minInvCPU), maxInv: max(a.maxInv, b.maxInv),
		minInvCap: min(a.minInvCap, b.minInvCap), maxInvC: max(a.maxInvC, b.maxInvC),
	}
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
	return k&Shard != 0 && sm.shard >= d.Units || k&MIG != 0 && sm.mig >= d.Units || k&Whole != 0 && sm.whole >= d.Units
}

// bound is the least (tight) or most (!tight) leftover any node under sm can have after
// taking d: the demand's CPU share and GPU units are at most/least what the extreme
// capacities under sm allow.
func (sm *summary) bound(d *Demand, tight bool) float64 {
	gpus := float64(d.GPUs)
	if tight {
		used := float64(d.Units) * gpus
		if d.kinds()&(MIG|Whole) != 0 {
			used = float64(max(d.Units, sm.mig, sm.whole)) * gpus
		}
		return sm.lo - 0.5*float64(d.CPU)*sm.maxInv - 0.5*used*sm.maxInvC
	}
	return sm.hi - 0.5*float64(d.CPU)*sm.minInvCPU - 0.5*float64(d.Units)*gpus*sm.minInvCap
}
