package placement_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
	"github.com/gpumem/gpumem/internal/trace"
)

// TestOursDesign reruns the experiment that settled Ours's design, on training seeds
// (1-10) that the published comparison (42-51) does not use. GPUMEM_EXPERIMENT=1 runs it.
func TestOursDesign(t *testing.T) {
	dir, _, pn, capacity := experimentTrace(t)
	for _, w := range []string{"gpushare20", "default", "gpushare40", "gpushare60", "gpushare80", "gpushare100", "multigpu20", "multigpu30", "multigpu40", "multigpu50"} {
		pods, err := trace.LoadPods(filepath.Join(dir, trace.WorkloadFile(w)))
		if err != nil {
			t.Fatal(err)
		}
		target := sim.NewTarget(pods, 0.95)
		demands := make([]placement.Demand, len(pods))
		for i := range pods {
			demands[i] = pods[i].Demand()
		}
		withMem := placement.WithMemory(target.Shapes, demands)
		variants := map[string]func(seed int64) placement.Policy{
			"fgd":                func(seed int64) placement.Policy { return placement.NewFGD(target.Shapes, uint64(seed)) },
			"gpumem":             func(int64) placement.Policy { return placement.NewOurs(withMem) },
			"without memory":     func(int64) placement.Policy { return placement.NewOursStep(target.Shapes, 0) },
			"steps of 40 milli":  func(int64) placement.Policy { return placement.NewOursStep(withMem, 40) },
			"without stranding":  func(int64) placement.Policy { return placement.NewOursStrand(withMem, true, 250) },
			"stranding, steps 1": func(int64) placement.Policy { return placement.NewOursStrand(withMem, false, 1) },
		}
		for name, mk := range variants {
			sum := 0.0
			for seed := int64(1); seed <= 10; seed++ {
				arr, err := sim.Arrivals(pods, capacity, 1.3, seed)
				if err != nil {
					t.Fatal(err)
				}
				r, err := sim.Replay(pn, arr, mk(seed), target.Shapes, 131)
				if err != nil {
					t.Fatal(err)
				}
				sum += r.Unallocated() / 10
			}
			t.Logf("%-11s %-22s unallocated %.2f%%", w, name, sum)
		}
	}
}

// experimentTrace skips unless GPUMEM_EXPERIMENT is set and the trace is here, else
// returns its folder, nodes (as the trace lists them and as placement takes them) and
// GPU capacity in milli-GPU.
func experimentTrace(t *testing.T) (string, []trace.Node, []placement.Node, int64) {
	t.Helper()
	if os.Getenv("GPUMEM_EXPERIMENT") == "" {
		t.Skip("design experiment: set GPUMEM_EXPERIMENT=1 (minutes of CPU)")
	}
	dir, err := trace.FindDir()
	if err != nil {
		t.Skip(err)
	}
	nodes, err := trace.LoadNodes(filepath.Join(dir, trace.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, nodes, trace.PlacementNodes(nodes), int64(trace.TotalGPUs(nodes)) * trace.MilliPerGPU
}
