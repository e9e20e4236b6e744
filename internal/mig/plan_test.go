package mig

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/trace"
)

func fourWhole(node string) []GPU {
	var gs []GPU
	for i := 0; i < 4; i++ {
		gs = append(gs, GPU{Node: node, Index: i, Model: "NVIDIA A100-SXM4-40GB", Layout: Layout{{"7g.40gb", 0}}})
	}
	return gs
}

// checkValid fails t unless every desired layout is valid for its model's placements.
func checkValid(t *testing.T, p ClusterPlan) {
	t.Helper()
	for _, g := range p.Desired {
		m, err := Lookup(g.Model)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Validate(g.Layout); err != nil {
			t.Errorf("%s GPU %d: planned an invalid layout: %v", g.Node, g.Index, err)
		}
	}
}

func TestPlanClusterGolden(t *testing.T) {
	gib := int64(1024)
	demand := []Demand{{10 * gib, 4}, {16 * gib, 3}, {4 * gib, 2}, {60 * gib, 1}}
	p, err := PlanCluster(fourWhole("n7"), demand, LayoutPolicy{KeepWhole: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, p)
	got := strings.Join(p.Explain(), "\n")
	want := `n7 gpu[1] (a100-40gb): 7g.40gb@0 -> 3g.20gb@0,3g.20gb@4 = 2×3g.20gb (20096 MiB)
n7 gpu[2] (a100-40gb): 7g.40gb@0 -> 1g.5gb@0,1g.5gb@1,3g.20gb@4 = 2×1g.5gb (4864 MiB) + 1×3g.20gb (20096 MiB)
n7 gpu[3] (a100-40gb): 7g.40gb@0 -> 3g.20gb@0,3g.20gb@4 = 2×3g.20gb (20096 MiB)
serves 80.0 % of the demand (8 of 10), was 40.0 % (4): +40.0 points; 3 of 4 MIG GPUs change; 1 kept as one full instance (keep-whole 25 %)
  requests ≤ 4864 MiB (1g.5gb): 2 of 2 served, was 0
  requests ≤ 20096 MiB (3g.20gb): 6 of 7 served, was 4
  requests more than any MIG instance: 0 of 1 served, was 0
note: 1 of 10 of the demand asks more than the largest MIG instance holds: it needs whole GPUs`
	if got != want {
		t.Errorf("explanation:\n%s\nwant:\n%s", got, want)
	}
	// The same inputs give the same plan, and applying it, then planning again, changes nothing.
	again, _ := PlanCluster(fourWhole("n7"), demand, LayoutPolicy{KeepWhole: 0.25})
	if strings.Join(again.Explain(), "\n") != got {
		t.Error("planning is not deterministic")
	}
	next, err := PlanCluster(p.Desired, demand, LayoutPolicy{KeepWhole: 0.25})
	if err != nil || len(next.Changes) != 0 {
		t.Errorf("planning the planned layout changes %d GPUs: %v\n%s", len(next.Changes), err, strings.Join(next.Explain(), "\n"))
	}
}

func TestPlanClusterRefuses(t *testing.T) {
	if _, err := PlanCluster([]GPU{{Node: "n", Model: "v100"}}, nil, LayoutPolicy{}); err == nil || !strings.Contains(err.Error(), `unknown GPU model "v100"`) {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := PlanCluster(fourWhole("n"), nil, LayoutPolicy{KeepWhole: 2}); err == nil {
		t.Error("a keep-whole share of 2 was taken")
	}
	p, err := PlanCluster(fourWhole("n"), nil, LayoutPolicy{})
	if err != nil || len(p.Changes) != 0 {
		t.Errorf("no demand changed %d GPUs: %v", len(p.Changes), err)
	}
}

func TestParseDemand(t *testing.T) {
	parse := func(s string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "G"), 10, 64)
		return n * 1024, err
	}
	ds, err := ParseDemand("# sizes\n20G 5\n10G\n\n", parse)
	if err != nil || len(ds) != 2 || ds[0] != (Demand{20 * 1024, 5}) || ds[1] != (Demand{10 * 1024, 1}) {
		t.Errorf("ParseDemand = %v, %v", ds, err)
	}
	for _, bad := range []string{"20G 5 6", "20G -1", "20G x", "xG 1"} {
		if _, err := ParseDemand(bad, parse); err == nil || !strings.Contains(err.Error(), "demand line 1") {
			t.Errorf("ParseDemand(%q) = %v", bad, err)
		}
	}
}

// TestPlanFromTrace plans 8 A100-80GB GPUs for the shared-GPU pods of the Alibaba trace:
// each pod's share of an 80 GiB GPU is the size it asks (the repository's synthetic
// sample's pods when the trace is not here).
func TestPlanFromTrace(t *testing.T) {
	dir, _, err := trace.TestData()
	if err != nil {
		t.Fatal(err)
	}
	pods, err := trace.LoadPods(dir + "/" + trace.WorkloadFile("default"))
	if err != nil {
		t.Fatal(err)
	}
	var demand []Demand
	for _, p := range pods {
		if p.Shared() {
			demand = append(demand, Demand{MiB: (p.GPUMilli*80*1024 + 999) / 1000, Weight: 1})
		}
	}
	if len(demand) == 0 {
		t.Fatal("no shared-GPU pod in the trace")
	}
	var gpus []GPU
	for i := 0; i < 8; i++ {
		gpus = append(gpus, GPU{Node: "t1", Index: i, Model: "a100-80gb", Layout: Layout{{"7g.80gb", 0}}})
	}
	p, err := PlanCluster(gpus, Scale(Merge(demand), 56), LayoutPolicy{KeepWhole: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, p)
	if p.After <= p.Before || len(p.Changes) == 0 {
		t.Errorf("the trace's small requests were not served better:\n%s", strings.Join(p.Explain(), "\n"))
	}
	t.Logf("trace plan (%d shared pods):\n%s", len(demand), strings.Join(p.Explain(), "\n"))
}

// TestPlanClusterSynthetic plans random demand on every catalog model, from random valid
// layouts: every plan is valid for its model's placements, serves no less than before,
// and planning its result again changes nothing.
func TestPlanClusterSynthetic(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 200; round++ {
		var gpus []GPU
		for i, m := range Catalog() {
			for k := 0; k < 1+rng.Intn(3); k++ {
				var sizes []int64
				for n := rng.Intn(4); n > 0; n-- {
					sizes = append(sizes, m.Profiles[rng.Intn(len(m.Profiles))].MiB)
				}
				ls, err := m.Plan(sizes)
				if err != nil {
					t.Fatal(err)
				}
				l := Layout{}
				if len(ls) > 0 {
					l = ls[0]
				}
				gpus = append(gpus, GPU{Node: "n" + strconv.Itoa(i), Index: k, Model: m.Key, Layout: l})
			}
		}
		var demand []Demand
		for n := 1 + rng.Intn(8); n > 0; n-- {
			demand = append(demand, Demand{MiB: int64(1+rng.Intn(150)) * 1024, Weight: float64(1 + rng.Intn(6))})
		}
		pol := LayoutPolicy{KeepWhole: float64(rng.Intn(5)) / 4}
		p, err := PlanCluster(gpus, demand, pol)
		if err != nil {
			t.Fatal(err)
		}
		checkValid(t, p)
		if p.After < p.Before {
			t.Fatalf("round %d: served %v, less than before (%v)", round, p.After, p.Before)
		}
		next, err := PlanCluster(p.Desired, demand, pol)
		if err != nil || next.After < p.After {
			t.Fatalf("round %d: replanning lost demand: %v\n%s", round, err, strings.Join(next.Explain(), "\n"))
		}
	}
}
