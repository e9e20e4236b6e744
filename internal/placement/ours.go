package placement

import (
	"hash/fnv"
	"math"
)

// OursName is the name of gpumem's own placement policy.
const OursName = "gpumem"

// Ours is gpumem's placement policy: FGD made memory-aware and deterministic, with
// best fit among equals for shares. Like FGD it sends a demand where the expected
// fragmentation against the target workload's shapes rises least, scored as FGD scores
// it (an integer 0-100 from a sigmoid, so that near-equal placements tie), but
//   - its target shapes carry host memory (WithMemory), so a GPU on a node whose memory
//     is spent counts as lost, as it is: FGD looks at CPU and GPU only;
//   - among equal scores it takes first the node where the demand leaves least GPU
//     without the CPU to feed it (stranding: a node whose CPU is spent strands its idle
//     GPUs, at the target's CPU per GPU, in steps of a quarter GPU; where the target
//     asks more CPU per GPU than the cluster has, at other rates, see stranding);
//   - it breaks the remaining ties without chance: nodes already in use before idle
//     ones; for a share of a GPU, then the node with the least idle GPU (best fit, so
//     shares fill the fullest nodes and leave whole GPUs whole on the others; an idle
//     node with fewer GPUs before a bigger one); then the order nodes were first put in use (useOrder),
//     so the oldest open node fills before a newer one; idle nodes in a fixed order
//     scrambled from their names by a hash (the published FGD's ties also follow one
//     fixed order that is not the names' order; see FGD), stable as nodes come and go.
//
// The same state and demand always give the same choice.
type Ours struct {
	cache *fragCache
	order useOrder
	rank  []uint64 // by node: its place among idle nodes (hash of its name)
	cands candidates
	// strand ranks ties by the GPU they leave without CPU (see stranding); its rate is
	// set from shapes on the first call, when the units' scale is known.
	strand stranding
	shapes []Shape
	scan   bool // look at every node on every call: the reference the index is tested against
}

// NewOurs makes the policy for a target workload's shapes (TargetShapes, best with
// WithMemory).
func NewOurs(shapes []Shape) *Ours { return newOurs(shapes, 0) }

// newOurs takes the scoring as a parameter for the experiments that chose it: step 0 is
// FGD's integer score, a positive step compares decreases in whole steps of that many
// milli-GPU.
func newOurs(shapes []Shape, step float64) *Ours {
	score := fgdScore
	if step > 0 {
		score = func(delta float64) float64 { return math.Floor(delta / step) }
	}
	return &Ours{cache: newFragCache(shapes, score), shapes: shapes, strand: stranding{cpuPerMilli: -1, step: 250}}
}

// ready sizes what follows the state: the use order, the name ranks, the stranding rate.
func (o *Ours) ready(s *State) {
	if len(o.rank) != len(s.Nodes) {
		o.rank = nameRanks(s)
	}
	if o.strand.cpuPerMilli < 0 {
		o.strand.cpuPerMilli = cpuPerMilli(o.shapes, milliPerUnit(s))
		var gpuShapes []Shape
		for _, sh := range o.shapes {
			if sh.GPUs > 0 {
				gpuShapes = append(gpuShapes, sh)
			}
		}
		o.strand.rates(s, cpuPerMilli(gpuShapes, milliPerUnit(s)))
	}
}

func (*Ours) Name() string { return OursName }

// Place takes the best node from the candidates' index (see candidates) when it can, else
// scores every node that admits d. Both give the same node.
func (o *Ours) Place(s *State, d *Demand) (Choice, bool) {
	o.order.begin(s)
	o.ready(s)
	bestN, indexed := -1, false
	if o.scan {
		o.order.numbered = o.order.numbered[:0] // no index reads them
	} else {
		bestN, indexed = o.cands.best(o, s, d)
	}
	if !indexed {
		bestN = o.scanAll(s, d)
	}
	if bestN < 0 {
		return Choice{}, false
	}
	o.order.last = bestN
	c := o.cache
	return c.choice(s, bestN, d, c.trial(c.nodeView[bestN], c.demandID(d), d))
}

// Prepare builds the candidates' index for each of ds on s ahead of time, so that the
// first Place of such a demand costs no pass over the cluster either.
func (o *Ours) Prepare(s *State, ds []Demand) {
	o.order.size(s)
	o.ready(s)
	for i := range ds {
		o.cands.prepare(o, s, &ds[i])
	}
}

// scanAll scores every node that admits d and returns the best, or -1.
func (o *Ours) scanAll(s *State, d *Demand) int {
	share := d.kinds()&Shard != 0 && d.GPUs == 1
	best, bestN, bestOrder := trial{}, -1, 0
	var bestIdle, bestStrand int64
	toMilli := milliPerUnit(s)
	o.cache.each(s, d, func(n int, t trial) {
		if bestN >= 0 && t.score < best.score {
			return
		}
		order := o.order.of(s, n)
		var idle int64
		if share {
			// Worked out only for nodes that lead or tie: most do neither.
			idle = idleMilli(&s.Nodes[n])
		}
		strand := o.strand.key(&s.Nodes[n], d, toMilli)
		if bestN < 0 || t.score > best.score || o.before(n, order, idle, strand, bestN, bestOrder, bestIdle, bestStrand) {
			best, bestN, bestOrder, bestIdle, bestStrand = t, n, order, idle, strand
		}
	})
	return bestN
}

// before reports whether node a wins a tie against node b: less GPU stranded (see
// stranding), then in use before idle, then less idle GPU (zero for demands other than
// shares), then first use, then name rank.
func (o *Ours) before(a, orderA int, idleA, strandA int64, b, orderB int, idleB, strandB int64) bool {
	if strandA != strandB {
		return strandA < strandB
	}
	if (orderA > 0) != (orderB > 0) {
		return orderA > 0
	}
	if idleA != idleB {
		return idleA < idleB
	}
	if orderA > 0 {
		return orderA < orderB
	}
	return o.rank[a] < o.rank[b]
}

// idleMilli is a node's idle GPU in thousandths of a GPU, summed over its GPUs.
func idleMilli(nd *Node) int64 {
	var idle int64
	for i := range nd.Devices {
		if c := nd.Devices[i].Capacity; c > 0 {
			idle += nd.Devices[i].Free() * 1000 / c
		}
	}
	return idle
}

// nameRanks scrambles the nodes' names into a fixed order: FNV-1a of the name, then the
// node's number where two names hash alike.
func nameRanks(s *State) []uint64 {
	r := make([]uint64, len(s.Nodes))
	for n := range s.Nodes {
		h := fnv.New64a()
		h.Write([]byte(s.Nodes[n].Name))
		r[n] = h.Sum64()&^0xffff | uint64(n&0xffff)
	}
	return r
}
