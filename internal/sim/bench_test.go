package sim

import (
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/trace"
)

// BenchmarkReplay is one run of the default workload, seed 42, per policy: the target
// is well under a second each.
func BenchmarkReplay(b *testing.B) {
	dir, _, nodes := testTrace(b)
	w := workload(b, dir, "default")
	pn := trace.PlacementNodes(nodes)
	capacity := int64(trace.TotalGPUs(nodes)) * trace.MilliPerGPU
	arr, err := Arrivals(w.Pods, capacity, 1.3, 42)
	if err != nil {
		b.Fatal(err)
	}
	target := NewTarget(w.Pods, 0.95)
	shapes := target.Shapes
	for _, name := range Policies {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p, err := NewPolicy(name, target, 42)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Replay(pn, arr, p, shapes, 131); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplayQueue is one replay with departures of the default workload's own
// times, submissions 100,000 times as dense (so the queue fills), per policy; it
// prints the cost per job (ns/job), the figure to watch.
func BenchmarkReplayQueue(b *testing.B) {
	dir, _, nodes := testTrace(b)
	jobs, err := LoadJobs(filepath.Join(dir, trace.WorkloadFile("default")))
	if err != nil {
		b.Fatal(err)
	}
	jobs = Replicate(jobs, 2)
	pods := make([]trace.Pod, len(jobs))
	for i := range jobs {
		pods[i] = jobs[i].Pod
	}
	target := NewTarget(pods, 0.95)
	pn := trace.PlacementNodes(nodes)
	for _, name := range Policies {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p, err := NewPolicy(name, target, 42)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ReplayQueue(pn, jobs, p, 1e5, 101); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(jobs)), "ns/job")
		})
	}
}
