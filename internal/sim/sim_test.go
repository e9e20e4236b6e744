package sim

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// fixture is the small trace shipped with the repository, so the protocol is tested
// where the Alibaba trace is absent.
func fixture(t *testing.T) ([]trace.Node, []trace.Pod) {
	t.Helper()
	nodes, err := trace.LoadNodes("../trace/testdata/nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := trace.LoadPods("../trace/testdata/pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

func TestArrivalsFollowTheProtocol(t *testing.T) {
	nodes, pods := fixture(t)
	capacity := int64(trace.TotalGPUs(nodes)) * trace.MilliPerGPU
	arr, err := Arrivals(pods, capacity, 1.3, 42)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	count := map[string]int{}
	for _, p := range arr {
		total += p.GPUDemand()
		count[p.Name]++
	}
	limit := int64(1.3 * float64(capacity))
	if total > limit {
		t.Fatalf("arrived %d milli-GPU, more than 130%% of %d", total, capacity)
	}
	for _, p := range pods {
		if count[p.Name] < 1 {
			t.Errorf("task %s of the workload never arrived", p.Name)
		}
	}
	if len(arr) <= len(pods) {
		t.Fatalf("%d arrivals for %d tasks: no draws were added", len(arr), len(pods))
	}
	// As the published simulator does it: the workload's own tasks first, each once in
	// a shuffled order, and the draws after them.
	first := map[string]int{}
	for _, p := range arr[:len(pods)] {
		first[p.Name]++
	}
	for _, p := range pods {
		if first[p.Name] != 1 {
			t.Errorf("task %s arrived %d times among the first %d arrivals, want once", p.Name, first[p.Name], len(pods))
		}
	}
	if reflect.DeepEqual(arr[:len(pods)], pods) {
		t.Error("the workload's tasks arrived in file order, not shuffled")
	}
	again, _ := Arrivals(pods, capacity, 1.3, 42)
	other, _ := Arrivals(pods, capacity, 1.3, 43)
	if !reflect.DeepEqual(arr, again) {
		t.Error("the same seed gave different arrivals")
	}
	if reflect.DeepEqual(arr, other) {
		t.Error("seeds 42 and 43 gave the same arrivals")
	}
	if _, err := Arrivals(nil, capacity, 1.3, 1); err == nil {
		t.Error("an empty workload was accepted")
	}
	if _, err := Arrivals(pods, capacity, 0, 1); err == nil || !strings.Contains(err.Error(), "1.3") {
		t.Errorf("tune 0 gave %v, want an error suggesting 1.3", err)
	}
}

func fixtureSpec(t *testing.T) Spec {
	nodes, pods := fixture(t)
	return Spec{Nodes: nodes, Workloads: []Workload{{Name: "fixture", Pods: pods}}, Policies: Policies,
		Seeds: []int64{1, 2, 3}, Tune: 1.3, Coverage: 0.95, Workers: 2}
}

func TestEveryPolicyKeepsWithinCapacityAndRepeats(t *testing.T) {
	spec := fixtureSpec(t)
	first, err := Run(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(spec.Policies)*len(spec.Seeds) {
		t.Fatalf("%d results, want %d", len(first), len(spec.Policies)*len(spec.Seeds))
	}
	for _, r := range first {
		if r.Allocated > r.Capacity || r.Allocated > r.Arrived || r.Allocated <= 0 {
			t.Errorf("%s seed %d: allocated %d of capacity %d, arrived %d", r.Policy, r.Seed, r.Allocated, r.Capacity, r.Arrived)
		}
		if len(r.Curve) != 131 {
			t.Errorf("%s: curve of %d points, want 131", r.Policy, len(r.Curve))
		}
		for k := 1; k < len(r.Curve); k++ {
			if r.Curve[k] < r.Curve[k-1] {
				t.Errorf("%s: allocation fell from %.2f to %.2f at %d%% arrived; nothing departs", r.Policy, r.Curve[k-1], r.Curve[k], k)
			}
		}
	}
	spec.Workers = 1
	second, err := Run(spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		a, b := first[i], second[i]
		if a.Policy != b.Policy || a.Seed != b.Seed || a.Allocated != b.Allocated || a.Failed != b.Failed || !reflect.DeepEqual(a.Curve, b.Curve) {
			t.Errorf("%s seed %d differs between runs: %d vs %d allocated", a.Policy, a.Seed, a.Allocated, b.Allocated)
		}
	}
}

// overcommit hands out the first node's first GPU whatever is left on it.
type overcommit struct{}

func (overcommit) Name() string { return "overcommit" }
func (overcommit) Place(s *placement.State, d *placement.Demand) (placement.Choice, bool) {
	c := placement.Choice{Node: 0}
	if d.GPUs > 0 {
		c.Kind = placement.Shard
		for i := range d.GPUs {
			c.Devices = append(c.Devices, i%len(s.Nodes[0].Devices))
		}
	}
	return c, true
}

func TestReplayRefusesAnOvercommittingPolicy(t *testing.T) {
	nodes, pods := fixture(t)
	arr, _ := Arrivals(pods, 9000, 1.3, 1)
	if _, err := Replay(trace.PlacementNodes(nodes), arr, overcommit{}, nil, 131); err == nil || !strings.Contains(err.Error(), "wrongly") {
		t.Fatalf("Replay with an overcommitting policy gave %v, want an error", err)
	}
}

func TestOutputs(t *testing.T) {
	spec := fixtureSpec(t)
	spec.Policies = []string{"fgd", placement.OursName}
	rs, err := Run(spec)
	if err != nil {
		t.Fatal(err)
	}
	sums := Summarize(rs)
	if len(sums) != 2 || sums[0].Seeds != 3 || sums[1].Policy != placement.OursName {
		t.Fatalf("summaries %+v, want fgd and %s over 3 seeds", sums, placement.OursName)
	}
	var buf bytes.Buffer
	if err := WriteCurveCSV(&buf, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(rows) != 7 || rows[0][4] != "0" || len(rows[1]) != 4+131 {
		t.Fatalf("curve CSV: %d rows, %v", len(rows), err)
	}
	buf.Reset()
	if err := WriteSVG(&buf, sums, nil); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "fixture") {
		t.Fatalf("SVG lacks its curves or title:\n%.300s", svg)
	}
	// The published runs' mean curve is drawn dashed beside a policy we ran (fgd), and
	// none for a policy they do not have.
	pub := PublishedCurves([]trace.Curve{
		{Workload: "openb_pod_list_fixture", Policy: "06-FGD", Seed: 1, Alloc: make([]float64, 131)},
		{Workload: "openb_pod_list_fixture", Policy: "06-FGD", Seed: 2, Alloc: make([]float64, 131)},
		{Workload: "openb_pod_list_fixture", Policy: "99-Other", Seed: 1, Alloc: make([]float64, 131)},
	})
	if len(pub["fixture"]) != 1 || len(pub["fixture"]["fgd"]) != 131 {
		t.Fatalf("published curves %v", pub)
	}
	buf.Reset()
	if err := WriteSVG(&buf, sums, pub); err != nil {
		t.Fatal(err)
	}
	svg = buf.String()
	if strings.Count(svg, "<polyline") != 3 || strings.Count(svg, "stroke-dasharray") != 1 || !strings.Contains(svg, "dashed: published runs") {
		t.Fatalf("SVG with the published curve: %d polylines, %d dashed", strings.Count(svg, "<polyline"), strings.Count(svg, "stroke-dasharray"))
	}
}

func TestParsePolicies(t *testing.T) {
	all, err := ParsePolicies("all")
	if err != nil || len(all) != len(Policies) {
		t.Fatalf("all = %v, %v", all, err)
	}
	if _, err := ParsePolicies("fgd,worst-fit"); err == nil || !strings.Contains(err.Error(), "worst-fit") || !strings.Contains(err.Error(), "gpu-packing") {
		t.Fatalf("unknown policy gave %v, want an error naming it and the known ones", err)
	}
}

func TestPublishedMeans(t *testing.T) {
	curves, err := trace.LoadCurves("../trace/testdata/curves.csv")
	if err != nil {
		t.Fatal(err)
	}
	p := Published(curves)
	if got := p["default"]["fgd"]; got < 98.0 || got > 98.02 {
		t.Fatalf("published fgd = %v, want 100-1.99", got)
	}
}
