// Package steer makes Slurm's own node selection follow a placement policy. Slurm's
// select/cons_tres starts a job on the lowest-Weight nodes that can take it, in node
// order among equal weights. Steering ranks the nodes so that, for the jobs expected,
// the first node in the ranking that can take a job is the node the policy would
// choose for it, and hands Slurm that ranking as node weights, so every start, from
// the main scheduler or from backfill, lands where the policy would put it.
//
// Weights only order nodes among those that can take a job; they never make a node
// unusable, so steering cannot starve a job or hold back backfill: at worst a job
// lands where first fit would have put it. The ranking is pure Go; Controller is one
// steering pass (read, unpin, snapshot, weights) and reaches Slurm only through the
// Slurm interface, which gpumemctl steer gives internal/slurmcli's runner. steer runs
// no command itself, since job_submit links it for the snapshot.
package steer

import (
	"cmp"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// Order ranks the nodes of s, the cluster as it is allocated now, best first. Each
// demand the ranking is made for asks that the node the policy chooses for it come
// before every other node that could take it:
//
//  1. the pending jobs, in priority order (pending must be in that order), each on the
//     state left by placing the ones before it, as the scheduler would start them;
//  2. then one demand per target shape, most frequent first, on the state after step 1.
//
// A demand whose wish contradicts the wishes already granted (a cycle) is left out:
// Slurm gives it the first node of the ranking that can take it. Nodes the wishes leave
// unordered go fullest first, the order in which best fit uses them. For best fit every
// wish agrees with fullest first, so Slurm then places every target size exactly where
// best fit would. newPolicy makes a fresh policy (policies keep per-state caches).
func Order(s *placement.State, pending []placement.Demand, target []placement.Shape, newPolicy func() placement.Policy) []int {
	work := s.Clone()
	w := newWishes(len(s.Nodes))
	pol := newPolicy()
	for i := range pending {
		d := pending[i]
		if c, ok := pol.Place(work, &d); ok {
			w.grant(c.Node, feasible(work, &d))
			if work.Commit(c, &d) != nil {
				break // the policy broke the state contract: rank by what is known
			}
		}
	}
	target = slices.Clone(target)
	slices.SortStableFunc(target, func(a, b placement.Shape) int { return cmp.Compare(b.Freq, a.Freq) })
	for _, m := range target {
		d := placement.Demand{CPU: m.CPU, Mem: m.Mem, GPUs: m.GPUs, Units: m.Units, Models: m.Models}
		if d.GPUs > 0 {
			d.Kinds = placement.Shard
		}
		if c, ok := pol.Place(work, &d); ok {
			w.grant(c.Node, feasible(work, &d))
		}
	}
	free := make([]int64, len(s.Nodes))
	for n := range work.Nodes {
		free[n] = freeUnits(&work.Nodes[n])
	}
	return w.order(func(a, b int) bool { return free[a] < free[b] || free[a] == free[b] && a < b })
}

// feasible lists the nodes that can take d now.
func feasible(s *placement.State, d *placement.Demand) []int {
	var out []int
	for n := range s.Nodes {
		if _, ok := s.FirstDevices(n, d); ok {
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
