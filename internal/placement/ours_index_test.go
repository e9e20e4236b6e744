package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOursIndexMatchesScan drives Ours with its index and Ours scanning every node (the
// exhaustive path Place used before the index) side by side on many random clusters and
// job sequences, and requires the same choice, or the same refusal, at every step. The
// sequences mix what the index must follow: commits of its own choices, releases, jobs
// put in use by someone else (nodes the use order has not numbered: Place must scan),
// nodes edited and reindexed, bursts of changes long enough to outrun the change log,
// more demands than the index keeps heaps for, choices not committed, clones.
func TestOursIndexMatchesScan(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	indexed, steps, unnumbered := 0, 0, 0
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 11))
		nodes, models, pools := randomCluster(rng)
		shapes := randomShapes(rng, models)
		step := 0.0
		if rng.IntN(4) == 0 {
			step = float64(1 + rng.IntN(50))
		}
		demands := make([]Demand, 1+rng.IntN(12))
		if rng.IntN(10) == 0 {
			demands = make([]Demand, maxHeaps+10) // past the heaps kept
		}
		for i := range demands {
			demands[i] = mixedDemand(rng, models, pools)
		}
		a, b := NewState(nodes), NewState(nodes)
		fast, ref := newOurs(shapes, step), newOurs(shapes, step)
		ref.scan = true
		if rng.IntN(3) == 0 {
			fast.Prepare(a, demands[:1+rng.IntN(len(demands))])
		}
		type placed struct {
			c Choice
			d Demand
		}
		var live []placed
		both := func(f func(s *State) error) {
			if ea, eb := f(a), f(b); (ea == nil) != (eb == nil) {
				t.Fatalf("round %d: states diverged: %v vs %v", round, ea, eb)
			}
		}
		for step := range 250 {
			switch r := rng.IntN(100); {
			case r < 12 && len(live) > 0: // a job ends
				i := rng.IntN(len(live))
				p := live[i]
				both(func(s *State) error { return s.Release(p.c, &p.d) })
				live = slices.Delete(live, i, i+1)
				continue
			case r < 16: // someone else places a job
				d := mixedDemand(rng, models, pools)
				if c, ok := (FirstFit{}).Place(a, &d); ok {
					both(func(s *State) error { return s.Commit(c, &d) })
					live = append(live, placed{c, d})
				}
				continue
			case r < 17: // an edit behind the policies' backs, then Reindex as State asks
				n, half := rng.IntN(len(a.Nodes)), rng.IntN(2) == 0
				both(func(s *State) error {
					if dv := s.Nodes[n].Devices; len(dv) > 0 && !dv[0].Whole && dv[0].Used == 0 {
						if half {
							dv[0].Capacity /= 2
						} else {
							dv[0].Used = dv[0].Capacity / 3 // held by no job the test knows
						}
					}
					s.Reindex()
					return nil
				})
				continue
			case r < 18: // a long burst: the change log drops what the index has not read
				for range 1500 {
					n := rng.IntN(len(a.Nodes))
					d := Demand{CPU: 1}
					if a.Commit(Choice{Node: n}, &d) == nil {
						if b.Commit(Choice{Node: n}, &d) != nil {
							t.Fatalf("round %d: states diverged", round)
						}
						both(func(s *State) error { return s.Release(Choice{Node: n}, &d) })
					}
				}
				continue
			case r < 19: // the caller moves on to a copy
				a, b = a.Clone(), b.Clone()
				continue
			}
			d := demands[rng.IntN(len(demands))]
			for n := range a.Nodes {
				if a.Nodes[n].UsedCPU > 0 && (len(fast.order.first) != len(a.Nodes) || fast.order.first[n] == 0) && n != fast.order.last {
					unnumbered++ // Place must scan here
					break
				}
			}
			steps++
			cf, okf := fast.Place(a, &d)
			cr, okr := ref.Place(b, &d)
			if okf != okr || okf && (cf.Node != cr.Node || cf.Kind != cr.Kind || !slices.Equal(cf.Devices, cr.Devices)) {
				t.Fatalf("round %d step %d, demand %+v: indexed %+v %v, scan %+v %v", round, step, d, cf, okf, cr, okr)
			}
			if !okf || rng.IntN(10) == 0 {
				continue // refused, or chosen and not taken
			}
			both(func(s *State) error { return s.Commit(cf, &d) })
			live = append(live, placed{cf, d})
		}
		if len(fast.cands.heaps) > 0 {
			indexed++
		}
	}
	t.Logf("%d rounds, %d calls, %d of them with a node in use not numbered yet; index used in %d rounds", rounds, steps, unnumbered, indexed)
	if indexed < rounds/2 || unnumbered == 0 || unnumbered > steps/2 {
		t.Fatal("the sequences do not exercise both the index and the scan it falls back to")
	}
}

// randomCluster is 1-40 nodes of one to three shapes' worth of variety: CPU and memory
// sizes, pools, two or three models, MIG instances, GPUs that cannot be shared, and some
// use already there when the policy first sees it.
func randomCluster(rng *rand.Rand) (nodes []Node, models, pools []string) {
	models = []string{"T4", "V100", "A100"}[:2+rng.IntN(2)]
	pools = []string{"gpu", "big", "debug"}[:1+rng.IntN(3)]
	capacity := []int64{1000, 1000, 2000}[rng.IntN(3)]
	for n := range 1 + rng.IntN(40) {
		nd := Node{Name: fmt.Sprintf("n%02d", n), CPU: int64(8+rng.IntN(3)*8) * 1000, Mem: int64(1+rng.IntN(4)) << 14}
		nd.Pools = []string{pools[rng.IntN(len(pools))]}
		if rng.IntN(4) == 0 {
			nd.Pools = append(nd.Pools, pools[rng.IntN(len(pools))])
		}
		model := models[rng.IntN(len(models))]
		for g := range rng.IntN(9) {
			dv := Device{GPU: g, Model: model, Capacity: capacity, Shareable: rng.IntN(8) != 0}
			switch rng.IntN(12) {
			case 0:
				dv.Profile, dv.Capacity, dv.Shareable = "3g", capacity/2, false
			case 1:
				dv.Used = int64(rng.IntN(int(capacity)))
			}
			nd.Devices = append(nd.Devices, dv)
		}
		if rng.IntN(6) == 0 {
			nd.UsedCPU = 1000
		}
		nodes = append(nodes, nd)
	}
	return nodes, models, pools
}

// randomShapes is a target workload: trace-like (CPU, memory, models, several GPUs) or
// production-like (ShapesOfSizes: single-GPU sizes only).
func randomShapes(rng *rand.Rand, models []string) []Shape {
	if rng.IntN(2) == 0 {
		var sizes []int64
		for range 1 + rng.IntN(5) {
			sizes = append(sizes, int64(50*(1+rng.IntN(20))))
		}
		shapes, err := ShapesOfSizes(sizes)
		if err != nil {
			panic(err)
		}
		return shapes
	}
	var shapes []Shape
	for range 1 + rng.IntN(4) {
		m := Shape{CPU: int64(rng.IntN(4)) * 1000, GPUs: rng.IntN(3), Units: int64(100 * (1 + rng.IntN(10))), Freq: rng.Float64() + 0.01}
		if rng.IntN(3) == 0 {
			m.Mem = int64(rng.IntN(3)) << 13
		}
		if rng.IntN(4) == 0 {
			m.Models = []string{models[0]}
		}
		shapes = append(shapes, m)
	}
	return shapes
}

func mixedDemand(rng *rand.Rand, models, pools []string) Demand {
	d := Demand{}
	if rng.IntN(2) == 0 {
		d.CPU, d.Mem = int64(rng.IntN(4))*1000, int64(rng.IntN(3))<<12
	}
	switch rng.IntN(5) {
	case 0:
	case 1, 2:
		d.GPUs, d.Units, d.Kinds = 1, int64(50*(1+rng.IntN(20))), Shard
	case 3:
		d.GPUs, d.Units, d.Kinds = 1+rng.IntN(3), 1000, Whole
	default:
		d.GPUs, d.Units = 1, int64(100*(1+rng.IntN(5)))
	}
	if rng.IntN(5) == 0 {
		d.Models = []string{models[rng.IntN(len(models))]}
	}
	if rng.IntN(3) == 0 {
		d.Pools = []string{pools[rng.IntN(len(pools))]}
	}
	return d
}
