package trace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

func TestFixtureLoads(t *testing.T) {
	nodes, err := LoadNodes("testdata/nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 || TotalGPUs(nodes) != 9 || nodes[2].Model != "V100M32" || nodes[3].CPUMilli != 16000 {
		t.Fatalf("nodes read wrong: %+v", nodes)
	}
	pods, err := LoadPods("testdata/pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 8 {
		t.Fatalf("%d pods, want 8", len(pods))
	}
	if p := pods[5]; len(p.Models) != 2 || p.Models[1] != "P100" || !p.Shared() || p.GPUDemand() != 250 {
		t.Fatalf("pod p5 read wrong: %+v", p)
	}
	if p := pods[4]; p.Shared() || p.GPUDemand() != 2000 {
		t.Fatalf("pod p4 read wrong: %+v", p)
	}
}

func TestPodsWithoutModelColumn(t *testing.T) {
	pods, err := ReadPods("multi.csv", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,10,4,1000\n"))
	if err != nil || len(pods) != 1 || pods[0].Models != nil || pods[0].GPUDemand() != 4000 {
		t.Fatalf("ReadPods = %+v, %v; want one 4-GPU pod of any model", pods, err)
	}
}

func TestDemandKinds(t *testing.T) {
	cases := []struct {
		pod   Pod
		kinds placement.Kind
		units int64
	}{
		{Pod{NumGPU: 1, GPUMilli: 460}, placement.Shard, 460},
		{Pod{NumGPU: 1, GPUMilli: 1000}, placement.Whole, 1000},
		{Pod{NumGPU: 4, GPUMilli: 1000}, placement.Whole, 1000},
		{Pod{CPUMilli: 8000}, 0, 0},
	}
	for _, c := range cases {
		d := c.pod.Demand()
		if d.Kinds != c.kinds || d.Units != c.units || d.GPUs != c.pod.NumGPU {
			t.Errorf("%+v gave demand %+v, want kinds %v units %d", c.pod, d, c.kinds, c.units)
		}
	}
	devs := PlacementNodes([]Node{{Name: "a", CPUMilli: 1000, MemMiB: 10, GPUs: 3, Model: "T4"}})[0].Devices
	if len(devs) != 3 || devs[2].GPU != 2 || devs[0].Capacity != MilliPerGPU || !devs[1].Shareable {
		t.Fatalf("devices built wrong: %+v", devs)
	}
}

func TestSequenceAndCurves(t *testing.T) {
	s, err := LoadSequence("testdata/sequence.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Policies) != 1 || s.Policies[0] != "06-FGD" || len(s.Pods) != 4 {
		t.Fatalf("sequence read wrong: %+v", s)
	}
	d := s.Decisions["06-FGD"]
	if d[0].Node != "n0" || !slices.Equal(d[0].GPUs, []int{1}) || d[1].GPUs != nil || !slices.Equal(d[2].GPUs, []int{0, 2}) || d[3].Node != "" || d[3].Arrived != 3500 {
		t.Fatalf("decisions read wrong: %+v", d)
	}
	nodes, _ := LoadNodes("testdata/nodes.csv")
	idx := NodeIndex(nodes)
	if n, err := Lookup(idx, d[1]); err != nil || n != 2 {
		t.Fatalf("Lookup = %d, %v; want 2", n, err)
	}
	if _, err := Lookup(idx, Decision{Node: "elsewhere"}); err == nil {
		t.Fatal("Lookup of an unknown node succeeded")
	}
	curves, err := LoadCurves("testdata/curves.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(curves) != 2 || curves[1].Policy != "06-FGD" || curves[1].Seed != 42 || curves[1].Final() != 1.99 {
		t.Fatalf("curves read wrong: %+v", curves)
	}
}

func TestBadInputNamesTheProblem(t *testing.T) {
	_, err := LoadPods("testdata/bad_pods.csv")
	if err == nil || !strings.Contains(err.Error(), "want whole GPUs") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v, want one naming line 2 and whole GPUs", err)
	}
	cases := map[string]string{
		"sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\n":                       `no column "model"`,
		"sn,cpu_milli,memory_mib,gpu,model\nn0,x,1,1,T4\n":              `column cpu_milli is "x", want a non-negative integer`,
		"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,T4\nn0,1,1,1,T4\n": "not used by an earlier node",
		"": "empty file",
	}
	for in, want := range cases {
		if _, err := ReadNodes("x.csv", strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadNodes(%q) error %v, want one containing %q", in, err, want)
		}
	}
}

func TestWorkloadNames(t *testing.T) {
	if f := WorkloadFile("gpushare40"); f != "openb_pod_list_gpushare40.csv" || WorkloadName("/x/"+f) != "gpushare40" {
		t.Fatalf("WorkloadFile/WorkloadName do not round-trip: %s", f)
	}
}

func TestFindDirHonoursEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(DirEnv, dir)
	if _, err := FindDir(); err == nil {
		t.Fatal("FindDir accepted a folder without the node list")
	}
	if err := os.WriteFile(filepath.Join(dir, NodesFile), []byte("sn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindDir(); err != nil || got != dir {
		t.Fatalf("FindDir = %q, %v; want %q", got, err, dir)
	}
}

// TestTestData: a folder named on purpose is never swapped for the sample, and without
// one the tests get the trace or the repository's sample, both readable.
func TestTestData(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	if _, _, err := TestData(); err == nil || !strings.Contains(err.Error(), DirEnv) {
		t.Fatalf("TestData with a wrong $%s = %v, want its error", DirEnv, err)
	}
	t.Setenv(DirEnv, "")
	dir, full, err := TestData()
	if err != nil {
		t.Fatal(err)
	}
	if !full && !strings.HasSuffix(filepath.ToSlash(dir), SampleRel) {
		t.Errorf("TestData = %s, not the full trace and not the sample", dir)
	}
	if _, err := LoadNodes(filepath.Join(dir, NodesFile)); err != nil {
		t.Error(err)
	}
	if _, err := LoadPods(filepath.Join(dir, WorkloadFile("default"))); err != nil {
		t.Error(err)
	}
}
