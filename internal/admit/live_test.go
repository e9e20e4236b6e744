package admit

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

func TestCheckAgainstLiveState(t *testing.T) {
	a, err := New(testCluster(), []string{"gpu"}, Options{Policy: "best-fit"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewState(testCluster())
	if got := len(s.Nodes[2].Devices); got != 4 {
		t.Fatalf("MIG node has %d devices, want its 4 instances", got)
	}
	d, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:60g"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Explain != "gpu:mem:60g x1 per node -> shard:60 in gpu" || d.GRES != "shard:60" || d.Serving[0] != "gpu" {
		t.Errorf("decision %+v", d)
	}
	dm := d.Demand()
	if dm.Units != 60*1024 || dm.Kinds != placement.Shard || dm.GPUs != 1 {
		t.Fatalf("demand %+v", dm)
	}
	for i := 0; i < 2; i++ {
		if f, err := a.Check(d, s); err != nil || f != placement.Now {
			t.Fatalf("H100 %d: %v", i, f)
		}
		c, _ := placement.BestFit{}.Place(s, &dm)
		if err := s.Commit(c, &dm); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := a.Check(d, s); err != nil || f != placement.WhenDrained {
		t.Errorf("both H100s hold 60g: %v, want %v", f, placement.WhenDrained)
	}
	whole, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:30g,gres:gpu:4"})
	if err != nil {
		t.Fatal(err)
	}
	if dm := whole.Demand(); dm.Models[0] != "a100" || dm.Units != 30*1024 || mustCheck(t, a, whole, s) != placement.Now {
		t.Errorf("4 x 30g on A100s: %+v %v", dm, mustCheck(t, a, whole, s))
	}
	if f, err := a.Check(Decision{}, s); err != nil || f != placement.Now {
		t.Errorf("a job without gpu:mem: %v", f)
	}
}

func mustCheck(t *testing.T, a *Admitter, d Decision, s *placement.State) placement.Fit {
	t.Helper()
	f, err := a.Check(d, s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Every policy ByName knows can serve Check, the fragmentation-aware ones from the target
// sizes (default or configured); before, fgd and gpumem failed New for want of shapes.
func TestCheckWithEveryPolicy(t *testing.T) {
	c := testCluster()
	for _, pol := range []string{"first-fit", "best-fit", "spread", "random", "gpu-packing", "fgd", "gpumem"} {
		for _, sizes := range [][]int64{nil, {8 << 10, 8 << 10, 30 << 10}} {
			a, err := New(c, nil, Options{Policy: pol, TargetSizesMiB: sizes})
			if err != nil {
				t.Fatalf("%s %v: %v", pol, sizes, err)
			}
			d, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:20g"})
			if err != nil {
				t.Fatal(err)
			}
			if f, err := a.Check(d, NewState(c)); err != nil || f != placement.Now {
				t.Errorf("%s %v: 20g on an empty cluster: %v, %v; want Now", pol, sizes, f, err)
			}
		}
	}
	if _, err := New(c, nil, Options{Policy: "fgd", TargetSizesMiB: []int64{-1}}); err == nil || !strings.Contains(err.Error(), "target size -1") {
		t.Errorf("negative target size: %v; want it refused, naming the size", err)
	}
}
