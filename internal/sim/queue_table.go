package sim

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/trace"
)

// QueueWorkload is a named, timed task list.
type QueueWorkload struct {
	Name string
	Jobs []Job
}

// QueueSpec is a table of replays with departures: every workload with every policy
// and seed, submissions sped up by Load.
type QueueSpec struct {
	Nodes     []trace.Node
	Workloads []QueueWorkload
	Policies  []string
	Seeds     []int64
	Load      float64
	Coverage  float64
	Points    int // allocation samples per run
	Workers   int
}

// QueueSummary is one workload x policy over its seeds: means of the per-run figures.
type QueueSummary struct {
	Workload     string    `json:"workload"`
	Policy       string    `json:"policy"`
	Seeds        int       `json:"seeds"`
	MeanWait     float64   `json:"mean_wait_s"`
	P95Wait      float64   `json:"p95_wait_s"`
	NeverStarted float64   `json:"never_started"`
	Backfilled   float64   `json:"backfilled"`
	MeanAlloc    float64   `json:"mean_alloc_pct"`
	Span         int64     `json:"span_s"`
	WallMS       float64   `json:"wall_ms"`
	Curve        []float64 `json:"alloc_over_time_pct"`
}

// RunQueue computes the table; summaries come in the order workload, policy.
func RunQueue(spec QueueSpec) ([]QueueSummary, error) {
	if len(spec.Workloads) == 0 || len(spec.Policies) == 0 || len(spec.Seeds) == 0 {
		return nil, fmt.Errorf("sim: need at least one workload, policy and seed")
	}
	nodes := trace.PlacementNodes(spec.Nodes)
	points := max(spec.Points, 2)
	targets := make([]*Target, len(spec.Workloads))
	for i, w := range spec.Workloads {
		pods := make([]trace.Pod, len(w.Jobs))
		for k := range w.Jobs {
			pods[k] = w.Jobs[k].Pod
		}
		targets[i] = NewTarget(pods, spec.Coverage)
	}
	nw, np, ns := len(spec.Workloads), len(spec.Policies), len(spec.Seeds)
	results := make([]QueueResult, nw*np*ns)
	errs := make([]error, len(results))
	parallel(len(results), spec.Workers, func(i int) {
		w, pi, si := i/(np*ns), i/ns%np, i%ns
		p, err := NewPolicy(spec.Policies[pi], targets[w], spec.Seeds[si])
		if err == nil {
			results[i], err = ReplayQueue(nodes, spec.Workloads[w].Jobs, p, spec.Load, points)
		}
		results[i].Workload, results[i].Seed = spec.Workloads[w].Name, spec.Seeds[si]
		if err != nil {
			errs[i] = fmt.Errorf("%s / %s / seed %d: %w", spec.Workloads[w].Name, spec.Policies[pi], spec.Seeds[si], err)
		}
	})
	var out []QueueSummary
	for i := 0; i < len(results); i += ns {
		for _, err := range errs[i : i+ns] {
			if err != nil {
				return nil, err
			}
		}
		rs := results[i : i+ns]
		s := QueueSummary{Workload: rs[0].Workload, Policy: rs[0].Policy, Seeds: ns, Span: rs[0].Span, Curve: make([]float64, points)}
		n := float64(ns)
		for _, r := range rs {
			s.MeanWait += r.MeanWait / n
			s.P95Wait += r.P95 / n
			s.NeverStarted += float64(r.NeverStarted) / n
			s.Backfilled += float64(r.Backfilled) / n
			s.MeanAlloc += r.MeanAlloc / n
			s.WallMS += float64(r.Wall.Microseconds()) / 1000 / n
			for k, v := range r.Curve {
				s.Curve[k] += v / n
			}
		}
		out = append(out, s)
	}
	return out, nil
}
