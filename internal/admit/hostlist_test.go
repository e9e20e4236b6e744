package admit

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// rangeCluster is 64 one-H100 nodes x0..x63 in partition gpu.
func rangeCluster() inventory.Cluster {
	var c inventory.Cluster
	for i := range 64 {
		c.Nodes = append(c.Nodes, inventory.Node{Name: fmt.Sprintf("x%d", i), Partitions: []string{"gpu"},
			GPUs: gpus(1, "NVIDIA H100 80GB HBM3", "h100", 81559, "")})
	}
	return c
}

// bytesPerRun is what f allocates per call, on average over runs calls.
func bytesPerRun(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestHostRangesBoundedByCluster: a --nodelist or --exclude naming a million hosts is
// read against the cluster's 64: under 1 MiB, where expanding it made a million names.
func TestHostRangesBoundedByCluster(t *testing.T) {
	a, err := New(rangeCluster(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []Job{
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[0-999999]"},
		{TresPerNode: "gres:gpu:mem:20g", ExcNodes: "x[63-1000062]"},
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[0-999999]", ExcNodes: "x[0-999999]"},
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "y[0-999999]"},
	} {
		if per := bytesPerRun(5, func() { _, _ = a.Admit(j) }); per > 1<<20 {
			t.Errorf("-w %q -x %q: %d bytes per decision, want under 1 MiB", j.ReqNodes, j.ExcNodes, per)
		}
		if per := bytesPerRun(5, func() { _ = a.Holds(Job{TresPerNode: "gres:shard:20", ReqNodes: j.ReqNodes, ExcNodes: j.ExcNodes}) }); per > 1<<20 {
			t.Errorf("Holds -w %q -x %q: %d bytes per check, want under 1 MiB", j.ReqNodes, j.ExcNodes, per)
		}
	}
}

// TestHostRangeSemantics: -w must name nodes the cluster has (the refusal names the
// first it lacks); -x may name any, and means the cluster's nodes it names.
func TestHostRangeSemantics(t *testing.T) {
	a, err := New(rangeCluster(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok := []Job{
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[0-3,63]"},
		{TresPerNode: "gres:gpu:mem:20g", ExcNodes: "x[1-1000000000],nosuch[0-99]"}, // x0 is left
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x0", ExcNodes: "x[1-1000000000]"},
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[5,5,5]"},
	}
	for _, j := range ok {
		if _, err := a.Admit(j); err != nil {
			t.Errorf("-w %q -x %q refused: %v", j.ReqNodes, j.ExcNodes, err)
		}
	}
	refused := []struct {
		j    Job
		says string
	}{
		{Job{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[0-999999]"}, "node x64 has no GPU gpumem knows"},
		{Job{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[00-01]"}, "node x00 has no GPU gpumem knows"},
		{Job{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[3-4],y[7-100000000]"}, "node y7 has no GPU gpumem knows"},
		{Job{TresPerNode: "gres:gpu:mem:20g", ExcNodes: "x[0-1000000]"}, "--exclude=x0,x1,"},
		{Job{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x[1", ExcNodes: "x0"}, "cannot read --nodelist=x[1"},
		{Job{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "x0", ExcNodes: "x[0-5"}, "cannot read --exclude=x[0-5"},
	}
	for _, c := range refused {
		_, err := a.Admit(c.j)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("-w %q -x %q: %v; want a refusal saying %q", c.j.ReqNodes, c.j.ExcNodes, err, c.says)
		}
	}
}

// TestHostRangeRefusalBounded: a refusal quoting host lists stays within 4 KiB, however
// long the lists or the cluster's share of them.
func TestHostRangeRefusalBounded(t *testing.T) {
	var c inventory.Cluster
	for i := range 2000 {
		c.Nodes = append(c.Nodes, inventory.Node{Name: fmt.Sprintf("node-with-a-long-name-%04d", i), Partitions: []string{"gpu"},
			GPUs: gpus(1, "NVIDIA H100 80GB HBM3", "h100", 81559, "")})
	}
	a, err := New(c, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	garbage := "x[" + strings.Repeat("1,", 200000) + "1"
	for _, j := range []Job{
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: "node-with-a-long-name-[0000-1999],nosuch", ExcNodes: "node-with-a-long-name-[0000-1998]"},
		{TresPerNode: "gres:gpu:mem:900g", ReqNodes: "node-with-a-long-name-[0000-1999]", ExcNodes: "nosuch[0-999999]"},
		{TresPerNode: "gres:gpu:mem:20g", ReqNodes: garbage},
		{TresPerNode: "gres:gpu:mem:20g", ExcNodes: garbage},
	} {
		_, err := a.Admit(j)
		if err == nil {
			t.Fatalf("-w %.60q -x %.60q admitted", j.ReqNodes, j.ExcNodes)
		}
		if n := len(err.Error()); n > 4<<10 {
			t.Errorf("-w %.60q -x %.60q: a refusal of %d bytes, want at most 4 KiB", j.ReqNodes, j.ExcNodes, n)
		}
		err = a.Holds(Job{TresPerNode: "gres:gpu:h100:1", Partitions: []string{"gpu"}, ReqNodes: j.ReqNodes, ExcNodes: j.ExcNodes})
		if err != nil && len(err.Error()) > 4<<10 {
			t.Errorf("Holds -w %.60q -x %.60q: a refusal of %d bytes, want at most 4 KiB", j.ReqNodes, j.ExcNodes, len(err.Error()))
		}
	}
}

// TestManyNodesBounded: --nodes=1000000 is refused after a look at each partition's
// nodes, not one per node asked for.
func TestManyNodesBounded(t *testing.T) {
	a, err := New(rangeCluster(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := Job{TresPerNode: "gres:gpu:mem:20g", MinNodes: 1000000}
	if per := bytesPerRun(3, func() {
		if _, err := a.Admit(j); err == nil {
			t.Fatal("a million nodes admitted on 64")
		}
	}); per > 1<<20 {
		t.Errorf("%d bytes per decision, want under 1 MiB", per)
	}
}
