package placement

import "math"

// OursName is the name of gpumem's own placement policy.
const OursName = "gpumem"

// oursStep is the resolution, in units of expected fragmentation, at which Ours tells
// two placements apart; nearer than that, packing decides. 40 milli-GPU is about the
// resolution of FGD's integer score near zero, and the design experiment
// (ours_experiment_test.go, on training seeds) found finer steps worse: the
// fragmentation estimate is not precise enough to be worth more than packing.
const oursStep = 40

// Ours is gpumem's placement policy: fragmentation-aware best fit. Like FGD it sends a
// demand where the expected fragmentation against the target workload rises least, but
//   - its target shapes carry host memory (WithMemory), so a GPU on a node whose memory
//     is spent counts as lost, as it is: FGD looks at CPU and GPU only;
//   - it compares decreases in whole steps of oursStep, so that near-equal placements
//     tie, and breaks ties by first fit over the nodes in the order they were put in
//     use (useOrder), never at random: the oldest open node fills before a newer one
//     and idle nodes open last, which keeps idle GPUs together for tasks that need
//     them. FGD's random draw among idle nodes and its integer score's coarse steps
//     leave more half-used nodes behind.
type Ours struct {
	cache *fragCache
	order useOrder
}

// NewOurs makes the policy for a target workload's shapes (TargetShapes, best with
// WithMemory). It draws nothing at random: the same state and demand always give the
// same choice.
func NewOurs(shapes []Shape) *Ours { return newOurs(shapes, oursStep) }

// newOurs takes the step as a parameter for the experiments that chose it; step 0
// compares decreases exactly.
func newOurs(shapes []Shape, step float64) *Ours {
	score := func(delta float64) float64 { return delta }
	if step > 0 {
		score = func(delta float64) float64 { return math.Floor(delta / step) }
	}
	return &Ours{cache: newFragCache(shapes, score)}
}

func (*Ours) Name() string { return OursName }

func (o *Ours) Place(s *State, d *Demand) (Choice, bool) {
	o.order.begin(s)
	best, bestN, bestOrder := trial{}, -1, 0
	o.cache.each(s, d, func(n int, t trial) {
		order := o.order.of(s, n)
		if bestN < 0 || t.score > best.score || (t.score == best.score && earlier(order, bestOrder)) {
			best, bestN, bestOrder = t, n, order
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
	o.order.last = bestN
	return o.cache.choice(s, bestN, d, best)
}
