package admit

import (
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
		if f := a.Check(d, s); f != placement.Now {
			t.Fatalf("H100 %d: %v", i, f)
		}
		c, _ := placement.BestFit{}.Place(s, &dm)
		if err := s.Commit(c, &dm); err != nil {
			t.Fatal(err)
		}
	}
	if f := a.Check(d, s); f != placement.WhenDrained {
		t.Errorf("both H100s hold 60g: %v, want %v", f, placement.WhenDrained)
	}
	whole, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:30g,gres:gpu:4"})
	if err != nil {
		t.Fatal(err)
	}
	if dm := whole.Demand(); dm.Models[0] != "a100" || dm.Units != 30*1024 || a.Check(whole, s) != placement.Now {
		t.Errorf("4 x 30g on A100s: %+v %v", dm, a.Check(whole, s))
	}
	if f := a.Check(Decision{}, s); f != placement.Now {
		t.Errorf("a job without gpu:mem: %v", f)
	}
}
