package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// tinyInstance is a random cluster of 1-3 nodes with 1-2 GPUs (models A and B) and
// 2-6 demands: whole GPUs, shares, CPU-only, some bound to a model, so exhaustive
// search finds the optimum.
func tinyInstance(rng *rand.Rand) ([]placement.Node, []placement.Demand) {
	var nodes []placement.Node
	for n := range 1 + rng.IntN(3) {
		model := []string{"A", "B"}[rng.IntN(2)]
		devs := make([]placement.Device, 1+rng.IntN(2))
		for g := range devs {
			devs[g] = placement.Device{GPU: g, Model: model, Capacity: trace.MilliPerGPU, Shareable: true}
		}
		nodes = append(nodes, placement.Node{Name: string(rune('a' + n)), CPU: int64(4 + rng.IntN(5)), Mem: int64(8 + rng.IntN(9)), Devices: devs})
	}
	var ds []placement.Demand
	for range 2 + rng.IntN(5) {
		d := placement.Demand{CPU: int64(1 + rng.IntN(5)), Mem: int64(1 + rng.IntN(9))}
		switch rng.IntN(4) {
		case 0: // CPU only
		case 1:
			d.GPUs, d.Kinds, d.Units = 1, placement.Shard, int64(100*(1+rng.IntN(9)))
		default:
			d.GPUs, d.Kinds, d.Units = 1+rng.IntN(2), placement.Whole, trace.MilliPerGPU
		}
		if d.GPUs > 0 && rng.IntN(3) == 0 {
			d.Models = []string{[]string{"A", "B"}[rng.IntN(2)]}
		}
		ds = append(ds, d)
	}
	return nodes, ds
}

// optimum is the most milli-GPU any placement of any subset of ds allocates: every
// demand skipped or put on every node and, for a share, every device it fits.
func optimum(s *placement.State, ds []placement.Demand) int64 {
	if len(ds) == 0 {
		return allocated(s)
	}
	best := optimum(s, ds[1:]) // skipped
	d := &ds[0]
	for n := range s.Nodes {
		var choices []placement.Choice
		if d.Kinds == placement.Shard {
			for i := range s.Nodes[n].Devices {
				if s.NodeAdmits(n, d) && s.DeviceFits(n, i, d, placement.Shard) {
					choices = append(choices, placement.Choice{Node: n, Kind: placement.Shard, Devices: []int{i}})
				}
			}
		} else if c, ok := s.FirstDevices(n, d); ok {
			choices = append(choices, c) // whole GPUs are interchangeable on a node
		}
		for _, c := range choices {
			if s.Commit(c, d) != nil {
				continue
			}
			best = max(best, optimum(s, ds[1:]))
			if err := s.Release(c, d); err != nil {
				panic(err)
			}
		}
	}
	return best
}

// atOptimum fails t if bound is below the exhaustive optimum opt, and reports whether
// it is the optimum (within a milli-GPU).
func atOptimum(t *testing.T, trial int, name string, bound float64, opt int64, nodes []placement.Node, ds []placement.Demand) bool {
	t.Helper()
	if bound < float64(opt)-1e-6 {
		t.Fatalf("trial %d: %s %.1f below the optimum %d (nodes %+v, demands %+v)", trial, name, bound, opt, nodes, ds)
	}
	return bound < float64(opt)+1
}

// feasible fails t if anything in s is allocated past its capacity.
func feasible(t *testing.T, s *placement.State) {
	t.Helper()
	for _, n := range s.Nodes {
		if n.UsedCPU > n.CPU || n.UsedMem > n.Mem {
			t.Fatalf("node %s: CPU %d of %d, memory %d of %d", n.Name, n.UsedCPU, n.CPU, n.UsedMem, n.Mem)
		}
		for _, d := range n.Devices {
			if d.Used > d.Capacity {
				t.Fatalf("node %s GPU %d: %d of %d", n.Name, d.GPU, d.Used, d.Capacity)
			}
		}
	}
}

// TestLimitsOnTinyInstances: the bound is at least the true optimum (exhaustive search)
// and so at least what the reference and every online policy allocate; the reference
// is feasible and never above the optimum.
func TestLimitsOnTinyInstances(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	tight, patTight, patBetter, improved := 0, 0, 0, 0
	for trial := range 400 {
		nodes, ds := tinyInstance(rng)
		opt := optimum(placement.NewState(nodes), ds)
		bound := AllocBound(nodes, ds, 200)
		if atOptimum(t, trial, "bound", bound, opt, nodes, ds) {
			tight++
		}
		pat := PatternBound(nodes, ds, 300)
		if atOptimum(t, trial, "pattern bound", pat, opt, nodes, ds) {
			patTight++
		}
		if pat < bound-1 {
			patBetter++
		}
		// Every online policy, in arrival order; the one that allocates most is where
		// the reference starts.
		var online int64 = -1
		var start []placement.Choice
		shapes := placement.WithMemory(placement.TargetShapes(ds, 1), ds)
		for _, name := range Policies {
			p, err := placement.ByName(name, int64(trial), shapes...)
			if err != nil {
				t.Fatal(err)
			}
			ps := placement.NewState(nodes)
			plan := make([]placement.Choice, len(ds))
			for i := range ds {
				plan[i].Node = -1
				if c, ok := p.Place(ps, &ds[i]); ok {
					if err := ps.Commit(c, &ds[i]); err != nil {
						t.Fatal(err)
					}
					plan[i] = c
				}
			}
			a := allocated(ps)
			if float64(a) > bound+1e-6 || float64(a) > pat+1e-6 {
				t.Fatalf("trial %d: %s allocates %d, above the bound %.1f or the pattern bound %.1f", trial, name, a, bound, pat)
			}
			if a > online {
				online, start = a, plan
			}
		}
		for _, from := range [][]placement.Choice{nil, start} {
			s, placed, err := Reference(nodes, ds, from)
			if err != nil {
				t.Fatal(err)
			}
			feasible(t, s)
			var sum int64
			for i, ok := range placed {
				if ok {
					sum += int64(ds[i].GPUs) * ds[i].Units
				}
			}
			got := allocated(s)
			if got != sum || got > opt {
				t.Fatalf("trial %d: reference allocates %d (placed demands sum to %d), optimum %d", trial, got, sum, opt)
			}
			if from != nil && got < online {
				t.Fatalf("trial %d: reference from the best online placement allocates %d, below it (%d)", trial, got, online)
			}
			if from != nil && got > online {
				improved++
			}
		}
	}
	// The bound is not the trivial min(demand, capacity) everywhere: it is exact on
	// a good share of these instances.
	if tight < 100 {
		t.Fatalf("the bound equals the optimum on only %d of 400 instances", tight)
	}
	t.Logf("bound equal to the optimum on %d of 400 instances", tight)
	// The pattern bound sees shares that cannot share a GPU: it must beat the
	// aggregate one somewhere and be exact more often.
	if patTight <= tight || patBetter == 0 {
		t.Fatalf("pattern bound exact on %d (aggregate %d), below the aggregate on %d", patTight, tight, patBetter)
	}
	t.Logf("pattern bound equal to the optimum on %d of 400 instances, below the aggregate bound on %d", patTight, patBetter)
	t.Logf("reference above the best online policy on %d of 400 instances", improved)
}

// TestBoundSeesModelsAndMemory: a hand-made case where neither demand nor capacity is
// the answer. Two 1-GPU nodes, model A with 8 GiB and model B with 64; three whole-GPU
// demands of 1000 milli: one bound to A with 16 GiB (fits no A node), two of 32 GiB
// (only B fits). At most one GPU can be allocated.
func TestBoundSeesModelsAndMemory(t *testing.T) {
	dev := func(m string) []placement.Device {
		return []placement.Device{{Model: m, Capacity: 1000, Shareable: true}}
	}
	nodes := []placement.Node{{Name: "a", CPU: 8, Mem: 8, Devices: dev("A")}, {Name: "b", CPU: 8, Mem: 64, Devices: dev("B")}}
	whole := placement.Demand{CPU: 1, Mem: 32, GPUs: 1, Kinds: placement.Whole, Units: 1000}
	ds := []placement.Demand{{CPU: 1, Mem: 16, GPUs: 1, Kinds: placement.Whole, Units: 1000, Models: []string{"A"}}, whole, whole}
	// The multiplier search converges from above; capacity (2000) and demand (3000)
	// are far.
	if b := AllocBound(nodes, ds, 200); b < 1000 || b > 1020 {
		t.Fatalf("bound %.2f, want 1000 to 1020 (one GPU: only B fits any demand)", b)
	}
}
