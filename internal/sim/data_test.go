package sim

import (
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// testTrace loads the Alibaba trace when it is on this machine (full is true), else the
// repository's synthetic sample (trace.TestData).
func testTrace(t testing.TB) (dir string, full bool, nodes []trace.Node) {
	t.Helper()
	dir, full, err := trace.TestData()
	if err != nil {
		t.Fatal(err)
	}
	if !full {
		t.Logf("the Alibaba trace is not here (%s, set $%s): replaying the repository's synthetic sample", trace.Source, trace.DirEnv)
	}
	nodes, err = trace.LoadNodes(filepath.Join(dir, trace.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, full, nodes
}

func workload(t testing.TB, dir, name string) Workload {
	t.Helper()
	pods, err := trace.LoadPods(filepath.Join(dir, trace.WorkloadFile(name)))
	if err != nil {
		t.Fatal(err)
	}
	return Workload{Name: name, Pods: pods}
}

// sequence is the reference run the reference tests compare with: the published one
// (its file) on the full trace. The sample has none, so there the reference is FGD
// with its own tie order (seed 7), recorded decision by decision on the default
// workload's arrivals (seed 42, tune 1.3) under the name the published file uses.
func sequence(t testing.TB, dir string, full bool, nodes []trace.Node, shapes []placement.Shape) *trace.Sequence {
	t.Helper()
	if full {
		seq, err := trace.LoadSequence(filepath.Join(dir, trace.SequenceFile))
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	capacity := int64(trace.TotalGPUs(nodes)) * trace.MilliPerGPU
	arr, err := Arrivals(workload(t, dir, "default").Pods, capacity, 1.3, 42)
	if err != nil {
		t.Fatal(err)
	}
	seq := &trace.Sequence{Pods: arr, Decisions: map[string][]trace.Decision{}}
	for name, ref := range map[string]placement.Policy{"06-FGD": placement.NewFGD(shapes, 7), "05-BestFit": placement.BestFit{}} {
		seq.Policies = append(seq.Policies, name)
		s := placement.NewState(trace.PlacementNodes(nodes))
		var used, arrived int64
		for i := range arr {
			d := arr[i].Demand()
			arrived += arr[i].GPUDemand()
			dec := trace.Decision{}
			if c, ok := ref.Place(s, &d); ok {
				if err := s.Commit(c, &d); err != nil {
					t.Fatal(err)
				}
				used += arr[i].GPUDemand()
				dec.Node, dec.GPUs = nodes[c.Node].Name, c.Devices
			}
			dec.UsedAfter, dec.Arrived = used, arrived
			seq.Decisions[name] = append(seq.Decisions[name], dec)
		}
	}
	return seq
}
