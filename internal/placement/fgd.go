package placement

import (
	"math"
	"math/rand/v2"
)

// FGD is Fragmentation Gradient Descent (Weng et al., USENIX ATC 2023): each demand goes
// where it increases the expected fragmentation of the cluster least, measured against
// the shapes of the target workload. It reproduces the published simulator's choices
// as far as they are determined: the fragmentation decrease (in GPUs) is squashed
// through a sigmoid into an integer score 0-100, so that many nodes tie. Among equal
// scores the reference run goes to a node already in use, and among those to the one
// first put in use (91% of its ties between nodes in use; the scheduler evidently
// keeps nodes in the order they received work). Ties among idle nodes are drawn at
// random.
type FGD struct {
	cache *fragCache
	rng   *rand.Rand
	order useOrder
}

// NewFGD makes an FGD policy for a target workload; seed fixes its tie-breaks.
func NewFGD(shapes []Shape, seed uint64) *FGD {
	return &FGD{cache: newFragCache(shapes, fgdScore), rng: newRand(seed)}
}

func (*FGD) Name() string { return "fgd" }

// fgdScore is the simulator's node score for a fragmentation decrease in milli-GPU.
func fgdScore(delta float64) float64 {
	return math.Trunc(100 / (1 + math.Exp(-delta/1000)))
}

func (f *FGD) Place(s *State, d *Demand) (Choice, bool) {
	f.order.begin(s)
	best, bestN := trial{}, -1
	bestScore, bestOrder := math.Inf(-1), 0
	var pick tieBreak
	f.cache.each(s, d, func(n int, t trial) {
		order := f.order.of(s, n)
		if t.score > bestScore || (t.score == bestScore && earlier(order, bestOrder)) {
			bestScore, bestOrder = t.score, order
			best, bestN = t, n
			pick.reset()
			pick.keep(f.rng)
			return
		}
		if t.score == bestScore && order == 0 && bestOrder == 0 && pick.keep(f.rng) {
			best, bestN = t, n
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
	f.order.last = bestN
	return f.cache.choice(s, bestN, d, best)
}

// Scores lists, for every node that can take d, FGD's score there (-1 where it cannot),
// so that a reference run's choice can be checked against the set of best nodes.
func (f *FGD) Scores(s *State, d *Demand) []float64 {
	out := make([]float64, len(s.Nodes))
	for i := range out {
		out[i] = -1
	}
	f.cache.each(s, d, func(n int, t trial) { out[n] = t.score })
	return out
}
