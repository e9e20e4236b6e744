package mig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

func a100(index int, mig bool, profiles ...string) inventory.GPU {
	g := inventory.GPU{Index: index, Name: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, MIG: mig}
	for _, p := range profiles {
		name, start, _ := strings.Cut(p, "@")
		var s int
		fmt.Sscan(start, &s)
		g.Instances = append(g.Instances, inventory.MIGInstance{Profile: name, Start: s})
	}
	return g
}

func TestLayoutOf(t *testing.T) {
	if l := LayoutOf(a100(0, true, "3g.20gb@4", "2g.10gb@0")); l.String() != "3g.20gb@4,2g.10gb@0" {
		t.Errorf("LayoutOf kept %q; want the instances in the order listed", l)
	}
	// No instances: an empty layout, not nil, so that it compares and prints as one.
	if l := LayoutOf(a100(0, true)); l == nil || l.String() != "" {
		t.Errorf("LayoutOf of a GPU without instances = %#v", l)
	}
}

func TestClusterGPUs(t *testing.T) {
	c := inventory.Cluster{Nodes: []inventory.Node{{Name: "n1", GPUs: []inventory.GPU{
		a100(0, true, "7g.40gb@0"),
		{Index: 1, Name: "Tesla V100", MIG: true},
		{Index: 2, Name: "NVIDIA L4"},
	}}}}
	gpus, notes := ClusterGPUs(c)
	if len(gpus) != 1 || gpus[0].Node != "n1" || gpus[0].Index != 0 || gpus[0].Layout.String() != "7g.40gb@0" {
		t.Errorf("planned GPUs = %+v; want n1 GPU 0 with its layout", gpus)
	}
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "n1 GPU 1: ") || notes[1] != "1 GPU(s) out of MIG mode (whole or shard GPUs) stay as they are" {
		t.Errorf("notes = %q", notes)
	}
}

func TestCheckTarget(t *testing.T) {
	gpus := []inventory.GPU{a100(0, true), a100(1, false), {Index: 2, Name: "some future GPU", MIG: true}}
	for _, c := range []struct {
		gpu    int
		layout string
		want   string // "" when accepted
	}{
		{0, "3g.20gb@0,3g.20gb@4", ""},
		{0, "3g.20gb@0,3g.20gb@0", "GPU 0: mig: a100-40gb: 3g.20gb@0 overlaps"},
		{1, "7g.40gb@0", "GPU 1 (NVIDIA A100-SXM4-40GB): MIG mode is off"},
		{2, "9g.99gb@0", ""}, // a model the catalog lacks: NVML checks it
		{3, "7g.40gb@0", "GPU 3: this node has 3 GPUs"},
	} {
		l, _ := ParseLayout(c.layout)
		err := CheckTarget(gpus, c.gpu, l)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("CheckTarget(GPU %d, %s) = %v; want %q", c.gpu, c.layout, err, c.want)
		}
	}
}

func TestStatus(t *testing.T) {
	c := inventory.Cluster{Nodes: []inventory.Node{{Name: "n1", GPUs: []inventory.GPU{
		a100(0, true, "3g.20gb@4", "3g.20gb@0"),
		a100(1, true, "7g.40gb@0"),
	}}}}
	ds := []Desired{{Version: DesiredVersion, Node: "n1", GPUs: []DesiredGPU{
		{Index: 0, Model: "a100-40gb", Layout: "3g.20gb@0,3g.20gb@4"},
		{Index: 1, Model: "a100-40gb", Layout: ""},
		{Index: 2, Model: "a100-40gb", Layout: "7g.40gb@0"},
	}}, {Version: DesiredVersion, Node: "n9", GPUs: []DesiredGPU{{Index: 0, Model: "a100-40gb", Layout: "7g.40gb@0"}}}}
	got, differ := Status(ds, c)
	want := []GPUState{
		{"n1", 0, "ok", "3g.20gb@0,3g.20gb@4", "3g.20gb@4,3g.20gb@0", "a100-40gb"}, // instance order aside
		{"n1", 1, "differs", "", "7g.40gb@0", "a100-40gb"},
		{"n1", 2, "unknown", "7g.40gb@0", "", "a100-40gb"},
		{"n9", 0, "unknown", "7g.40gb@0", "", "a100-40gb"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || differ != 3 {
		t.Errorf("Status = %v, %d not ok;\nwant %v, 3", got, differ, want)
	}
}

func TestQueueDemand(t *testing.T) {
	got := QueueDemand([]int64{12, 3}, []TypedWait{{"3g.20gb", 2}, {"a100", 1}, {"1g.5gb", 1}}, 1024)
	want := []Demand{{12 * 1024, 1}, {3 * 1024, 1}, {20096, 2}, {4864, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("QueueDemand = %v; want %v (a whole-GPU type carries no size)", got, want)
	}
	if got := QueueDemand(nil, nil, 1024); got != nil {
		t.Errorf("no pending job: %v", got)
	}
	if mib, ok := ProfileMiB("h100-80gb"); ok {
		t.Errorf("a model name was taken for a profile of %d MiB", mib)
	}
}

func TestLayoutMiB(t *testing.T) {
	m := mustModel(t, "h100-80gb")
	l, _ := ParseLayout("3g.40gb@0,3g.40gb@4")
	if mib, err := m.LayoutMiB(l); err != nil || mib != 2*mustProfile(t, m, "3g.40gb").MiB {
		t.Errorf("LayoutMiB(%s) = %d, %v", l, mib, err)
	}
	l, _ = ParseLayout("7g.80gb@0,1g.10gb@0")
	if _, err := m.LayoutMiB(l); err == nil {
		t.Errorf("an invalid layout was summed")
	}
}

func mustProfile(t *testing.T, m Model, name string) Profile {
	t.Helper()
	p, err := m.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
