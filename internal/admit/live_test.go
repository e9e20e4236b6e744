package admit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/placement/placementtest"
)

func TestCheckAgainstLiveState(t *testing.T) {
	a, err := New(testCluster(), []string{"gpu"}, Options{PlacementPolicy: "best-fit"})
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
		if f, err := a.Check(d, s); err != nil || f != placementtest.Now {
			t.Fatalf("H100 %d: %v", i, f)
		}
		c, _ := placement.BestFit{}.Place(s, &dm)
		if err := s.Commit(c, &dm); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := a.Check(d, s); err != nil || f != placementtest.WhenDrained {
		t.Errorf("both H100s hold 60g: %v, want %v", f, placementtest.WhenDrained)
	}
	whole, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:30g,gres:gpu:4"})
	if err != nil {
		t.Fatal(err)
	}
	if dm := whole.Demand(); dm.Models[0] != "a100" || dm.Units != 30*1024 || mustCheck(t, a, whole, s) != placementtest.Now {
		t.Errorf("4 x 30g on A100s: %+v %v", dm, mustCheck(t, a, whole, s))
	}
	if f, err := a.Check(Decision{}, s); err != nil || f != placementtest.Now {
		t.Errorf("a job without gpu:mem: %v", f)
	}
}

func mustCheck(t *testing.T, a *Admitter, d Decision, s *placement.State) placementtest.Fit {
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
			a, err := New(c, nil, Options{PlacementPolicy: pol, TargetSizesMiB: sizes})
			if err != nil {
				t.Fatalf("%s %v: %v", pol, sizes, err)
			}
			d, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:20g"})
			if err != nil {
				t.Fatal(err)
			}
			if f, err := a.Check(d, NewState(c)); err != nil || f != placementtest.Now {
				t.Errorf("%s %v: 20g on an empty cluster: %v, %v; want Now", pol, sizes, f, err)
			}
		}
	}
	if _, err := New(c, nil, Options{PlacementPolicy: "fgd", TargetSizesMiB: []int64{-1}}); err == nil || !strings.Contains(err.Error(), "target size -1") {
		t.Errorf("negative target size: %v; want it refused, naming the size", err)
	}
}

// Checking a decision against a live state: only these tests use it, so it lives here.

// NewState is the placement state of c with nothing allocated, in MiB: a full GPU is one
// device of its real memory (shareable unless exposed whole), a GPU in MIG mode one device
// per instance. Nodes keep their partitions as pools, their CPUs and host memory.
func NewState(c inventory.Cluster) *placement.State {
	nodes := make([]placement.Node, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		nd := placement.Node{Name: n.Name, Pools: n.Partitions, CPU: int64(n.CPUs), Mem: n.MemoryMiB}
		for _, g := range n.GPUs {
			if !g.MIG {
				nd.Devices = append(nd.Devices, placement.Device{GPU: g.Index, Model: g.Type, Capacity: g.MemoryMiB, Shareable: g.Shared()})
				continue
			}
			for _, in := range g.Instances {
				nd.Devices = append(nd.Devices, placement.Device{GPU: g.Index, Model: g.Type, Profile: in.Profile, Capacity: in.MemoryMiB})
			}
		}
		nodes = append(nodes, nd)
	}
	return placement.NewState(nodes)
}

// Demand is what a decision asks of one node in placement terms. A per-job GPU count is
// treated as that many GPUs on one node, the strictest reading, so a check never promises
// more than Slurm will find.
func (d Decision) Demand() placement.Demand {
	if !d.Changed {
		return placement.Demand{}
	}
	dm := placement.Demand{GPUs: int(d.GPUs), Units: d.Units, Kinds: d.Kind, Pools: d.Serving}
	if d.Kind == placement.Whole {
		dm.Models = []string{d.Model}
	}
	return dm
}

// Check says whether the decision fits the live state s now under the configured policy,
// would fit once running work drains, or never fits. Jobs without gpu:mem fit now.
func (a *Admitter) Check(d Decision, s *placement.State) (placementtest.Fit, error) {
	if !d.Changed {
		return placementtest.Now, nil
	}
	dm := d.Demand()
	pol, err := placement.ByName(a.opt.PlacementPolicy, 1, a.shapes...)
	if err != nil {
		return placementtest.Never, fmt.Errorf("admit: %w", err)
	}
	return placementtest.Availability(s, pol, &dm), nil
}
