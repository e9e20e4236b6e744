// Comparison with a reference run (the published implementation's decisions on one
// arrival sequence): only the reference tests use it, so it lives beside them.

package sim

import (
	"container/heap"
	"fmt"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// Agreement compares a policy with a reference run of the same arrival sequence.
type Agreement struct {
	Tasks int
	// Free run: the policy makes its own decisions from the start.
	SameNode        int     // decisions on the same node (or both failed)
	Alloc, RefAlloc float64 // allocation % at the end
	// Forced run: the state follows the reference's decisions; at each step a second
	// policy's choice is compared with the reference's, and its scores are asked
	// whether the reference's node was among its best.
	Forced, ForcedSame, ForcedBest int
}

// Scorer gives every node's score for a demand, -1 where it cannot go; higher is better.
type Scorer func(s *placement.State, d *placement.Demand) []float64

// Compare replays seq's arrivals with p and checks it against the decisions of the
// reference policy ref (a name the sequence file uses, e.g. "06-FGD"). When forced is
// not nil it also replays the reference's own decisions, asking forced (a fresh policy
// of the same kind) for its choice and, where scores is not nil, whether the
// reference's node scored best.
func Compare(nodes []trace.Node, seq *trace.Sequence, ref string, p, forced placement.Policy, scores Scorer) (Agreement, error) {
	dec, ok := seq.Decisions[ref]
	if !ok {
		return Agreement{}, fmt.Errorf("sim: the sequence has no decisions of %q, it has %v", ref, seq.Policies)
	}
	index := trace.NodeIndex(nodes)
	pnodes := trace.PlacementNodes(nodes)
	a := Agreement{Tasks: len(seq.Pods)}
	free := placement.NewState(pnodes)
	fs := placement.NewState(pnodes)
	var used, capacity int64
	for _, n := range pnodes {
		capacity += int64(len(n.Devices)) * trace.MilliPerGPU
	}
	for i := range seq.Pods {
		pod := &seq.Pods[i]
		d := pod.Demand()
		want, err := trace.Lookup(index, dec[i])
		if err != nil {
			return a, fmt.Errorf("sim: reference decision %d: %w", i, err)
		}
		got := -1
		if c, ok := p.Place(free, &d); ok {
			if err := free.Commit(c, &d); err != nil {
				return a, fmt.Errorf("sim: %s placed task %d wrongly: %w", p.Name(), i, err)
			}
			got = c.Node
			used += pod.GPUDemand()
		}
		if got == want {
			a.SameNode++
		}
		if forced == nil || want < 0 {
			continue
		}
		a.Forced++
		if c, ok := forced.Place(fs, &d); ok && c.Node == want {
			a.ForcedSame++
		}
		if scores != nil {
			sc := scores(fs, &d)
			top := -1.0
			for _, v := range sc {
				top = max(top, v)
			}
			if sc[want] >= 0 && sc[want] == top {
				a.ForcedBest++
			}
		}
		c, err := referenceChoice(fs, want, dec[i].GPUs, &d)
		if err != nil {
			return a, fmt.Errorf("sim: reference decision %d (%s on %s): %w", i, pod.Name, dec[i].Node, err)
		}
		if err := fs.Commit(c, &d); err != nil {
			return a, fmt.Errorf("sim: reference decision %d (%s on %s) does not fit our model: %w", i, pod.Name, dec[i].Node, err)
		}
	}
	a.Alloc = 100 * float64(used) / float64(capacity)
	a.RefAlloc = 100 * float64(dec[len(dec)-1].UsedAfter) / float64(capacity)
	return a, nil
}

// referenceChoice rebuilds a reference decision: the GPUs it names, or else the first
// that fit (which whole GPUs does not change any figure).
func referenceChoice(s *placement.State, n int, gpus []int, d *placement.Demand) (placement.Choice, error) {
	if len(gpus) == d.GPUs && d.GPUs > 0 {
		return placement.Choice{Node: n, Kind: d.Kinds, Devices: gpus}, nil
	}
	c, ok := s.FirstDevices(n, d)
	if !ok {
		return c, fmt.Errorf("node cannot take it in our model")
	}
	return c, nil
}

// TieOrder asks whether a reference run broke its ties in one fixed order of the nodes,
// as a scheduler that takes the first best node of a fixed list does. Replaying the
// reference's own decisions, each step where the reference's node tied with others
// under scores says that node comes before them. It returns an order (rank by node)
// that honours every such statement but those that contradict earlier ones, and how
// many steps contradicted.
func TieOrder(nodes []trace.Node, seq *trace.Sequence, ref string, scores Scorer) (rank []int, conflicts int, err error) {
	dec, ok := seq.Decisions[ref]
	if !ok {
		return nil, 0, fmt.Errorf("sim: the sequence has no decisions of %q, it has %v", ref, seq.Policies)
	}
	index := trace.NodeIndex(nodes)
	s := placement.NewState(trace.PlacementNodes(nodes))
	n := len(s.Nodes)
	before := make([][]bool, n) // before[a][b]: a must come before b
	for i := range before {
		before[i] = make([]bool, n)
	}
	for i := range seq.Pods {
		d := seq.Pods[i].Demand()
		want, err := trace.Lookup(index, dec[i])
		if err != nil {
			return nil, 0, fmt.Errorf("sim: reference decision %d: %w", i, err)
		}
		if want < 0 {
			continue
		}
		sc := scores(s, &d)
		var rivals []int
		contradicts := false
		for m, v := range sc {
			if m != want && v == sc[want] {
				rivals = append(rivals, m)
				contradicts = contradicts || before[m][want]
			}
		}
		if contradicts {
			conflicts++
		} else {
			for _, m := range rivals {
				before[want][m] = true
			}
		}
		c, err := referenceChoice(s, want, dec[i].GPUs, &d)
		if err == nil {
			err = s.Commit(c, &d)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("sim: reference decision %d: %w", i, err)
		}
	}
	return topoRank(before), conflicts, nil
}

// topoRank orders the nodes so that a comes before b wherever before[a][b], taking the
// lowest-numbered free node first; nodes caught in a cycle (left by contradictions
// through several steps) go last, in number order.
func topoRank(before [][]bool) []int {
	n := len(before)
	indeg := make([]int, n)
	for a := range before {
		for b, yes := range before[a] {
			if yes {
				indeg[b]++
			}
		}
	}
	free := &intHeap{}
	for a := range indeg {
		if indeg[a] == 0 {
			heap.Push(free, a)
		}
	}
	rank := make([]int, n)
	for i := range rank {
		rank[i] = -1
	}
	next := 0
	for free.Len() > 0 {
		a := heap.Pop(free).(int)
		rank[a], next = next, next+1
		for b, yes := range before[a] {
			if yes {
				if indeg[b]--; indeg[b] == 0 {
					heap.Push(free, b)
				}
			}
		}
	}
	for a := range rank {
		if rank[a] < 0 {
			rank[a], next = next, next+1
		}
	}
	return rank
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
