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
//     tie, and breaks ties never at random: best fit at whole-GPU granularity (the
//     node left with the fewest idle GPUs), then first fit over the nodes in the order
//     they were put in use (useOrder), idle nodes last. The fullest, oldest open node
//     fills before a newer one, which keeps idle GPUs together for tasks that need
//     them; FGD's random draw among idle nodes leaves more half-used nodes behind.
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
	best, bestN := trial{}, -1
	var bestRoom, bestOrder int
	o.cache.each(s, d, func(n int, t trial) {
		order := o.order.of(s, n)
		if bestN >= 0 && t.score < best.score {
			return
		}
		// The room is worked out only for nodes that tie or lead: most do neither.
		room := idleGPUs(&s.Nodes[n])
		if bestN < 0 || t.score > best.score || room < bestRoom || (room == bestRoom && earlier(order, bestOrder)) {
			best, bestN, bestRoom, bestOrder = t, n, room, order
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
	o.order.last = bestN
	return o.cache.choice(s, bestN, d, best)
}

// idleGPUs is a node's idle GPU share in whole GPUs, rounded down: the room best fit
// compares, coarse enough that nodes a share apart still tie and go to first fit.
func idleGPUs(nd *Node) int {
	var idle int64
	for i := range nd.Devices {
		if nd.Devices[i].Capacity > 0 {
			idle += nd.Devices[i].Free() * 1000 / nd.Devices[i].Capacity
		}
	}
	return int(idle / 1000)
}
