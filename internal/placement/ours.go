package placement

import (
	"hash/fnv"
	"math"
)

// OursName is the name of gpumem's own placement policy.
const OursName = "gpumem"

// Ours is gpumem's placement policy: FGD made memory-aware and deterministic. Like FGD
// it sends a demand where the expected fragmentation against the target workload's
// shapes rises least, scored as FGD scores it (an integer 0-100 from a sigmoid, so that
// near-equal placements tie), but
//   - its target shapes carry host memory (WithMemory), so a GPU on a node whose memory
//     is spent counts as lost, as it is: FGD looks at CPU and GPU only;
//   - it breaks ties without chance: nodes already in use first, in the order they were
//     put in use (useOrder), so the oldest open node fills before a newer one and idle
//     GPUs stay together on fewer nodes; idle nodes last, in a fixed order scrambled
//     from the nodes' names by a hash (the published FGD's ties also follow one fixed
//     order that is not the names' order; see FGD), stable when nodes come and go.
//
// The same state and demand always give the same choice.
type Ours struct {
	cache *fragCache
	order useOrder
	rank  []uint64 // by node: its place among idle nodes (hash of its name)
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
	return &Ours{cache: newFragCache(shapes, score)}
}

func (*Ours) Name() string { return OursName }

func (o *Ours) Place(s *State, d *Demand) (Choice, bool) {
	o.order.begin(s)
	if len(o.rank) != len(s.Nodes) {
		o.rank = nameRanks(s)
	}
	best, bestN, bestOrder := trial{}, -1, 0
	o.cache.each(s, d, func(n int, t trial) {
		order := o.order.of(s, n)
		if bestN >= 0 && t.score < best.score {
			return
		}
		if bestN < 0 || t.score > best.score || earlier(order, bestOrder) ||
			(order == 0 && bestOrder == 0 && o.rank[n] < o.rank[bestN]) {
			best, bestN, bestOrder = t, n, order
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
	o.order.last = bestN
	return o.cache.choice(s, bestN, d, best)
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
