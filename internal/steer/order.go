// Package steer makes Slurm's own node selection follow a placement policy. Slurm's
// select/cons_tres starts a job on the lowest-Weight nodes that can take it, in node
// order among equal weights. Steering ranks the nodes the way the policy would fill
// them and hands Slurm that ranking as node weights, so every start, from the main
// scheduler or from backfill, lands where the policy would put it.
//
// Weights only order nodes among those that can take a job; they never make a node
// unusable, so steering cannot starve a job or hold back backfill: at worst a job
// lands where first fit would have put it. Pure Go, no I/O: the Slurm side is a thin
// layer in gpumemctl steer.
package steer

import (
	"cmp"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// Order ranks the nodes of s, the cluster as it is allocated now, best first:
//
//  1. the nodes the policy puts the pending jobs on, placed one after another in
//     priority order (pending must be in that order), as the scheduler would start them;
//  2. then, repeatedly, the node the policy sends most of the expected demand to, among
//     the nodes not ranked yet: each target shape votes, with its frequency, for the
//     node the policy chooses for it, on the state left after step 1;
//  3. then the nodes no target shape fits, fullest first.
//
// Slurm gives a job the first node of the ranking that can take it. With one target
// shape that is the policy's own choice for it; with several, the choice for the bulk
// of them. Sizes outside the target go to the first ranked node they fit, which is
// why the target should be the sizes jobs really ask (ShapesOfSizes of recent and
// pending requests). newPolicy makes a fresh policy
// each time it is called (policies keep per-state caches). Cost: one placement per
// pending job, plus one per target shape per node ranked in step 2.
func Order(s *placement.State, pending []placement.Demand, target []placement.Shape, newPolicy func() placement.Policy) []int {
	work := s.Clone()
	ranked := make([]bool, len(s.Nodes))
	order := make([]int, 0, len(s.Nodes))
	rank := func(n int) {
		if !ranked[n] {
			ranked[n] = true
			order = append(order, n)
		}
	}
	target = slices.Clone(target)
	slices.SortStableFunc(target, func(a, b placement.Shape) int { return cmp.Compare(b.Freq, a.Freq) })
	pol := newPolicy()
	for i := range pending {
		d := pending[i]
		if c, ok := pol.Place(work, &d); ok && work.Commit(c, &d) == nil {
			rank(c.Node)
		}
	}
	for {
		rest := unranked(ranked)
		n, ok := vote(work, rest, target, newPolicy)
		if !ok {
			break
		}
		rank(n)
	}
	rest := unranked(ranked)
	slices.SortStableFunc(rest, func(a, b int) int { return int(freeUnits(&work.Nodes[a]) - freeUnits(&work.Nodes[b])) })
	return append(order, rest...)
}

// vote returns the node of rest that the policy chooses for the largest share of the
// target, on a state of those nodes alone.
func vote(work *placement.State, rest []int, target []placement.Shape, newPolicy func() placement.Policy) (int, bool) {
	if len(rest) == 0 {
		return 0, false
	}
	nodes := make([]placement.Node, len(rest))
	for i, n := range rest {
		nodes[i] = work.Nodes[n]
	}
	sub := placement.NewState(nodes)
	pol := newPolicy()
	votes := make([]float64, len(rest))
	best := -1
	for _, m := range target {
		d := placement.Demand{CPU: m.CPU, Mem: m.Mem, GPUs: m.GPUs, Units: m.Units, Models: m.Models}
		c, ok := pol.Place(sub, &d)
		if !ok {
			continue
		}
		votes[c.Node] += m.Freq
		// Equal votes go to the node the more common shape chose: Order sorted the target.
		if best < 0 || votes[c.Node] > votes[best] {
			best = c.Node
		}
	}
	if best < 0 {
		return 0, false
	}
	return rest[best], true
}

func unranked(ranked []bool) []int {
	var out []int
	for n, r := range ranked {
		if !r {
			out = append(out, n)
		}
	}
	return out
}

func freeUnits(nd *placement.Node) int64 {
	var free int64
	for i := range nd.Devices {
		free += nd.Devices[i].Free()
	}
	return free
}

// Weights turns a ranking into Slurm node weights: base for the first node, one more
// for each next. Distinct weights make the ranking total, so node order in slurm.conf
// no longer decides anything among the ranked nodes.
func Weights(order []int, base uint32) []uint32 {
	w := make([]uint32, len(order))
	for i, n := range order {
		w[n] = base + uint32(i)
	}
	return w
}
