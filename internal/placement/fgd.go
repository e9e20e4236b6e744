package placement

import "math"

// FGD is Fragmentation Gradient Descent (Weng et al., USENIX ATC 2023): each demand goes
// where it increases the expected fragmentation of the cluster least, measured against
// the shapes of the target workload. It makes the published simulator's choices: the
// fragmentation decrease (in GPUs) is squashed through a sigmoid into an integer score
// 0-100, so that hundreds of nodes tie; ties go to the node that comes first in one
// order of the nodes, fixed for the whole run, and within a node to the lowest-numbered
// GPU. The published run's order is not the nodes' names or their list order but looks
// random: its 8,334 placements on its seed-42 sequence are consistent with a single
// order but for 3 (internal/sim TestReferenceTiesFollowOneOrder). So the order here is
// a random permutation drawn from the seed, unless WithNodeOrder gives one.
type FGD struct {
	cache *fragCache
	seed  uint64
	rank  []int // by node: its place in the tie-breaking order
}

// NewFGD makes an FGD policy for a target workload; seed fixes its tie-breaking order.
func NewFGD(shapes []Shape, seed uint64) *FGD {
	c := newFragCache(shapes, fgdScore)
	c.byIndex = true
	return &FGD{cache: c, seed: seed}
}

// WithNodeOrder makes ties go to the node with the lowest rank[n] instead of a random
// order; rank must have one entry per node of the state the policy will place on.
func (f *FGD) WithNodeOrder(rank []int) *FGD {
	f.rank = rank
	return f
}

func (*FGD) Name() string { return "fgd" }

// fgdScore is the simulator's node score for a fragmentation decrease in milli-GPU.
func fgdScore(delta float64) float64 {
	return math.Trunc(100 / (1 + math.Exp(-delta/1000)))
}

func (f *FGD) Place(s *State, d *Demand) (Choice, bool) {
	if len(f.rank) != len(s.Nodes) {
		f.rank = newRand(f.seed).Perm(len(s.Nodes))
	}
	best, bestN := trial{}, -1
	f.cache.each(s, d, func(n int, t trial) {
		if bestN < 0 || t.score > best.score || (t.score == best.score && f.rank[n] < f.rank[bestN]) {
			best, bestN = t, n
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
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
