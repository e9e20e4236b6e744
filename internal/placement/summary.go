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
	minInvCPU, maxInv    float64 // 1/CPU scale bounds (0 where no node has a CPU count)
	minInvCap, maxInvC   float64 // 1/GPU scale bounds (0 where no node has devices)
	devShare, minShare   float64 // most and least one device holds of the GPU scale
	// Leftover share before placing, least and most, among the nodes that could take a
	// demand of a kind, so that nodes unable to take it do not loosen the bound.
	loBy, hiBy byFit
}

// byFit keeps one extreme of the leftover share of the nodes that have at least so much
// free: bucket i holds the extreme over the nodes whose largest free shard space has a
// bit length of i or more, and over those with at least i free MIG instances or idle
// full GPUs. Held as suffixes, a bound is one lookup, and joining two is still the
// extreme bucket by bucket.
type byFit struct {
	shard      [shardBuckets]float64
	mig, whole [countBuckets]float64
}

const (
	shardBuckets = 24 // bit lengths 0..23; larger free spaces share the last bucket
	countBuckets = 9  // 0..8 devices; more share the last bucket
)

func (b *byFit) fill(v float64) {
	for i := range b.shard {
		b.shard[i] = v
	}
	for i := range b.mig {
		b.mig[i], b.whole[i] = v, v
	}
}

// join keeps the extreme of a and b in every bucket; lower picks which.
func (b *byFit) join(a, c *byFit, lower bool) {
	for i := range b.shard {
		b.shard[i] = pick(lower, a.shard[i], c.shard[i])
	}
	for i := range b.mig {
		b.mig[i], b.whole[i] = pick(lower, a.mig[i], c.mig[i]), pick(lower, a.whole[i], c.whole[i])
	}
}

// extreme is the least (lower) or most leftover share of the nodes that may take d.
func (b *byFit) extreme(d *Demand, lower bool) float64 {
	m := math.Inf(-1)
	if lower {
		m = math.Inf(1)
	}
	scan := func(list []float64, from int) { m = pick(lower, m, list[min(from, len(list)-1)]) }
	k := d.kinds()
	if k&Shard != 0 {
		scan(b.shard[:], shardBucket(d.Units))
	}
	if k&MIG != 0 {
		scan(b.mig[:], d.GPUs)
	}
	if k&Whole != 0 {
		scan(b.whole[:], d.GPUs)
	}
	return m
}

func pick(lower bool, a, b float64) float64 {
	if lower {
		return min(a, b)
	}
	return max(a, b)
}

func shardBucket(units int64) int { return min(bits.Len64(uint64(max(units, 0))), shardBuckets-1) }

// emptySummary stands for no node: it fits nothing and bounds nothing.
func emptySummary() summary {
	sm := summary{cpu: -1, mem: -1, shard: -1, mig: -1, whole: -1, shardN: -1, migN: -1, wholeN: -1,
		lo: math.Inf(1), hi: math.Inf(-1), minInvCPU: math.Inf(1), minInvCap: math.Inf(1), minShare: math.Inf(1)}
	sm.loBy.fill(math.Inf(1))
	sm.hiBy.fill(math.Inf(-1))
	return sm
}

func summarize(nd *Node, sc scale) summary {
	sm := emptySummary()
	sm.cpu, sm.mem, sm.shardN, sm.migN, sm.wholeN = nd.CPU-nd.UsedCPU, nd.Mem-nd.UsedMem, 0, 0, 0
	var capacity, free, biggest int64
	smallest := int64(math.MaxInt64)
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		capacity += dv.Capacity
		biggest, smallest = max(biggest, dv.Capacity), min(smallest, dv.Capacity)
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
	sm.minInvCPU, sm.minInvCap, sm.minShare = sc.invCPU, sc.invGPU, 0
	if capacity > 0 {
		sm.devShare = float64(biggest) * sc.invGPU
		sm.minShare = float64(smallest) * sc.invGPU
	}
	sm.maxInv, sm.maxInvC = sm.minInvCPU, sm.minInvCap
	sm.lo = sc.leftover(nd.CPU-nd.UsedCPU, free)
	sm.hi = sm.lo
	for _, b := range [...]*byFit{&sm.loBy, &sm.hiBy} {
		if sm.shardN > 0 {
			fillTo(b.shard[:], shardBucket(sm.shard), sm.lo)
		}
		fillTo(b.mig[:], min(sm.migN, countBuckets-1), sm.lo)
		fillTo(b.whole[:], min(sm.wholeN, countBuckets-1), sm.lo)
	}
	return sm
}

// fillTo sets list[0..last] to v: a node counts in every bucket up to its own.
func fillTo(list []float64, last int, v float64) {
	for i := range list[:last+1] {
		list[i] = v
	}
}

func joinSummaries(a, b *summary) summary {
	sm := summary{
		cpu: max(a.cpu, b.cpu), mem: max(a.mem, b.mem),
		shard: max(a.shard, b.shard), mig: max(a.mig, b.mig), whole: max(a.whole, b.whole),
		shardN: max(a.shardN, b.shardN), migN: max(a.migN, b.migN), wholeN: max(a.wholeN, b.wholeN),
		lo: min(a.lo, b.lo), hi: max(a.hi, b.hi),
		minInvCPU: min(a.minInvCPU, b.minInvCPU), maxInv: max(a.maxInv, b.maxInv),
		minInvCap: min(a.minInvCap, b.minInvCap), maxInvC: max(a.maxInvC, b.maxInvC),
		devShare: max(a.devShare, b.devShare), minShare: min(a.minShare, b.minShare),
	}
	sm.loBy.join(&a.loBy, &b.loBy, true)
	sm.hiBy.join(&a.hiBy, &b.hiBy, false)
	return sm
}

// mayFit is a necessary condition for d somewhere under sm: enough CPU, host memory and,
// for a GPU demand, enough devices of an allowed kind with enough units.
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
// taking d. A shard takes Units of its node's capacity; a MIG instance or full GPU at
// least Units and its own share, between the smallest and the largest device's.
func (sm *summary) bound(d *Demand, tight bool) float64 {
	gpus := float64(d.GPUs)
	if tight {
		before, share := sm.lo, float64(d.Units)*sm.maxInvC
		if d.GPUs > 0 {
			before = sm.loBy.extreme(d, true)
		}
		if d.kinds()&(MIG|Whole) != 0 {
			share = max(share, sm.devShare)
		}
		return before - 0.5*float64(d.CPU)*sm.maxInv - 0.5*gpus*share
	}
	before, share := sm.hi, float64(d.Units)*sm.minInvCap
	if d.GPUs > 0 {
		before = sm.hiBy.extreme(d, false)
	}
	if d.kinds()&Shard == 0 {
		share = max(share, sm.minShare)
	}
	return before - 0.5*float64(d.CPU)*sm.minInvCPU - 0.5*gpus*share
}
