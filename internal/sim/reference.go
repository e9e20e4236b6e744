package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// ReferenceName is the offline reference's name in tables; BoundName the bound's.
const (
	ReferenceName = "offline"
	BoundName     = "bound"
)

// refBudget bounds the local search: candidate (node, evicted demand) pairs examined in
// one run, so the reference costs about what one online run costs.
const refBudget = 4_000_000

// Reference places ds offline, knowing all of them in advance, and keeps the best of
// up to three plans (the most GPU allocated; the first on a tie). Two are
// decreasing-order plans placed by gpumem's policy (its target made from ds
// themselves) under the trace's constraints (model, CPU, memory): the first takes
// demands in decreasing GPU (then memory, then CPU, then arrival order),
// first-fit-decreasing's order; the second in decreasing GPU per share of the
// cluster's CPU and memory it costs, the order the bound's relaxation fills in.
// Demands without GPU come last in both, where they cost the objective nothing. The
// third, when start is given (start[i] where demand i went, Node -1 for left out: in
// the tables, the placement of the online policy that allocated most), starts from
// that placement, so the reference is never worse than it. Each plan is then improved
// by a bounded local search: a demand left out takes the place of one placed demand of
// less GPU on some node, and the evicted one is placed elsewhere if it fits anywhere.
// Every such move raises the allocation, so the search ends; refBudget bounds it.
// Deterministic: no chance anywhere. Every choice goes through State.Commit, so the
// result is a feasible placement. It returns the final state and, per demand, whether
// it was placed.
func Reference(nodes []placement.Node, ds []placement.Demand, start []placement.Choice) (*placement.State, []bool, error) {
	var bestS *placement.State
	var bestPlaced []bool
	plans := []planFrom{planBySize, planByCost}
	if start != nil {
		plans = append(plans, planFromStart)
	}
	for _, from := range plans {
		s, placed, err := referencePlan(nodes, ds, from, start)
		if err != nil {
			return nil, nil, err
		}
		if bestS == nil || allocated(s) > allocated(bestS) {
			bestS, bestPlaced = s, placed
		}
	}
	return bestS, bestPlaced, nil
}

// planFrom is where a reference plan starts.
type planFrom int

const (
	planBySize    planFrom = iota // decreasing GPU, then memory, then CPU
	planByCost                    // decreasing GPU per share of CPU and memory
	planFromStart                 // a given placement
)

func referencePlan(nodes []placement.Node, ds []placement.Demand, from planFrom, start []placement.Choice) (*placement.State, []bool, error) {
	s := placement.NewState(nodes)
	gpu := func(i int) int64 { return int64(ds[i].GPUs) * ds[i].Units }
	var C, M float64
	for _, n := range nodes {
		C += float64(n.CPU)
		M += float64(n.Mem)
	}
	cost := func(i int) float64 {
		return (ratio(float64(ds[i].CPU), C) + ratio(float64(ds[i].Mem), M)) / float64(max(gpu(i), 1))
	}
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if from == planByCost {
			return cmp.Or(cmp.Compare(min(gpu(b), 1), min(gpu(a), 1)), cmp.Compare(cost(a), cost(b)))
		}
		return cmp.Or(cmp.Compare(gpu(b), gpu(a)), cmp.Compare(ds[b].Mem, ds[a].Mem), cmp.Compare(ds[b].CPU, ds[a].CPU))
	})
	fit, err := placement.ByName(placement.OursName, 0, placement.WithMemory(placement.TargetShapes(ds, 0.95), ds)...)
	if err != nil {
		return nil, nil, err
	}
	placed := make([]bool, len(ds))
	choice := make([]placement.Choice, len(ds))
	on := make([][]int, len(nodes)) // demands placed on each node
	put := func(i int, c placement.Choice) error {
		if err := s.Commit(c, &ds[i]); err != nil {
			return err
		}
		placed[i], choice[i] = true, c
		on[c.Node] = append(on[c.Node], i)
		return nil
	}
	if from == planFromStart {
		if len(start) != len(ds) {
			return nil, nil, fmt.Errorf("sim: a start placement of %d demands for %d", len(start), len(ds))
		}
		for i, c := range start {
			if c.Node < 0 {
				continue
			}
			if err := put(i, c); err != nil {
				return nil, nil, fmt.Errorf("sim: the start placement of demand %d: %w", i, err)
			}
		}
	} else {
		for _, i := range order {
			if c, ok := fit.Place(s, &ds[i]); ok {
				if err := put(i, c); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	budget := refBudget
	failed := map[shapeKey]bool{} // shapes no move could place since the last move
	for _, u := range order {
		du := &ds[u]
		if placed[u] || gpu(u) == 0 || failed[keyOf(du)] {
			continue
		}
		moved := false
		for n := range s.Nodes {
			if budget <= 0 {
				return s, placed, nil
			}
			nd := &s.Nodes[n]
			if !modelAllows(nd, du) {
				continue
			}
			free := freeUnits(nd)
			for k, v := range on[n] {
				budget--
				dv := &ds[v]
				if gpu(v) >= gpu(u) || nd.CPU-nd.UsedCPU+dv.CPU < du.CPU || nd.Mem-nd.UsedMem+dv.Mem < du.Mem || free+gpu(v) < gpu(u) {
					continue
				}
				if err := s.Release(choice[v], dv); err != nil {
					return nil, nil, err
				}
				c, ok := s.FirstDevices(n, du)
				if !ok {
					// Undone exactly: v back on its devices, the node's list untouched.
					if err := s.Commit(choice[v], dv); err != nil {
						return nil, nil, err
					}
					continue
				}
				// The list changes only here, and the range ends at once.
				placed[v] = false
				on[n] = slices.Delete(on[n], k, k+1)
				if err := put(u, c); err != nil {
					return nil, nil, err
				}
				if c, ok := fit.Place(s, dv); ok {
					if err := put(v, c); err != nil {
						return nil, nil, err
					}
				}
				moved = true
				break
			}
			if moved {
				break
			}
		}
		if moved {
			clear(failed)
		} else {
			failed[keyOf(du)] = true
		}
	}
	return s, placed, nil
}

type shapeKey struct {
	cpu, mem, units int64
	gpus            int
	models          string
}

func keyOf(d *placement.Demand) shapeKey {
	k := shapeKey{cpu: d.CPU, mem: d.Mem, units: d.Units, gpus: d.GPUs}
	for _, m := range d.Models {
		k.models += m + ","
	}
	return k
}

func modelAllows(nd *placement.Node, d *placement.Demand) bool {
	if len(d.Models) == 0 {
		return true
	}
	for i := range nd.Devices {
		if slices.Contains(d.Models, nd.Devices[i].Model) {
			return true
		}
	}
	return false
}

func freeUnits(nd *placement.Node) int64 {
	var f int64
	for i := range nd.Devices {
		f += nd.Devices[i].Free()
	}
	return f
}

// allocated is the GPU units in use in s.
func allocated(s *placement.State) int64 {
	var a int64
	for i := range s.Nodes {
		for _, d := range s.Nodes[i].Devices {
			a += d.Used
		}
	}
	return a
}
