package sim

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// sweepCounts are what the axes move, counted over a task list.
type sweepCounts struct {
	cpuOnly, gpuTasks, single, whole int
	gpuCPU, mem                      int64
}

func countSweep(pods []trace.Pod) (c sweepCounts) {
	for i := range pods {
		p := &pods[i]
		c.mem += p.MemMiB
		if p.NumGPU == 0 {
			c.cpuOnly++
			continue
		}
		c.gpuTasks++
		c.gpuCPU += p.CPUMilli
		if p.NumGPU == 1 {
			c.single++
			if !p.Shared() {
				c.whole++
			}
		}
	}
	return c
}

// TestSweepAxesMoveWhatTheySay: every point of every axis moves its own quantity to
// about x (drawn axes within a few standard deviations) and leaves the others alone, the
// same workload for the same point every time, and no task made impossible.
func TestSweepAxesMoveWhatTheySay(t *testing.T) {
	dir, _, nodes := testTrace(t)
	base := workload(t, dir, "default")
	b := countSweep(base.Pods)
	pts := SweepWorkloads(base, nodes, SweepAxes)
	again := SweepWorkloads(base, nodes, SweepAxes)
	near := func(got, want float64, n int, what string, p SweepPoint) {
		t.Helper()
		// A binomial share of n draws: four standard deviations, at least one task.
		tol := 4*math.Sqrt(want*(1-want)/float64(n)) + 1/float64(n)
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %s %.3f, want %.3f within %.3f", p.Name, what, got, want, tol)
		}
	}
	empty := placement.NewState(trace.PlacementNodes(nodes))
	fits := map[string]bool{} // by request, bound model included
	for i, p := range pts {
		if !slices.EqualFunc(p.Pods, again[i].Pods, func(a, b trace.Pod) bool {
			return a.Name == b.Name && a.CPUMilli == b.CPUMilli && a.MemMiB == b.MemMiB && a.GPUMilli == b.GPUMilli && slices.Equal(a.Models, b.Models)
		}) {
			t.Errorf("%s: derived twice, differs", p.Name)
		}
		c := countSweep(p.Pods)
		if p.Axis != "cpuonly" && (c.cpuOnly != b.cpuOnly || c.gpuTasks != b.gpuTasks) {
			t.Errorf("%s: %d CPU-only and %d GPU tasks, want the base's %d and %d", p.Name, c.cpuOnly, c.gpuTasks, b.cpuOnly, b.gpuTasks)
		}
		switch p.Axis {
		case "cpuonly":
			// floor(x) copies of each, and one more drawn with probability frac(x).
			f := p.X - math.Floor(p.X)
			if want := float64(b.cpuOnly) * p.X; math.Abs(float64(c.cpuOnly)-want) > 4*math.Sqrt(float64(b.cpuOnly)*f*(1-f))+1 {
				t.Errorf("%s: %d CPU-only tasks, want about %.0f", p.Name, c.cpuOnly, want)
			}
			if c.gpuTasks != b.gpuTasks {
				t.Errorf("%s: %d GPU tasks, want %d", p.Name, c.gpuTasks, b.gpuTasks)
			}
		case "cpupergpu":
			near(float64(c.gpuCPU)/float64(b.gpuCPU), p.X, b.gpuTasks, "GPU tasks' CPU / base's", p)
		case "memory":
			near(float64(c.mem)/float64(b.mem), p.X, len(base.Pods), "memory / base's", p)
		case "whole":
			near(float64(c.whole)/float64(c.single), p.X, c.single, "whole share of single-GPU tasks", p)
		case "models":
			// Of the GPU tasks the base leaves unbound (the trace binds none; the
			// repository's sample binds a tenth), a share x is bound; the others keep theirs.
			newly, free := 0, 0
			for i := range p.Pods {
				if base.Pods[i].NumGPU == 0 || len(base.Pods[i].Models) > 0 {
					if !slices.Equal(p.Pods[i].Models, base.Pods[i].Models) {
						t.Errorf("%s: task %s's models %v, want the base's %v", p.Name, p.Pods[i].Name, p.Pods[i].Models, base.Pods[i].Models)
					}
					continue
				}
				free++
				if len(p.Pods[i].Models) > 0 {
					newly++
				}
			}
			near(float64(newly)/float64(free), p.X, free, "bound share of the unbound GPU tasks", p)
		default:
			t.Fatalf("axis %s not checked", p.Axis)
		}
		for i := range p.Pods {
			pod := &p.Pods[i]
			if len(pod.Models) == 0 || p.Axis != "models" || len(base.Pods[i].Models) > 0 {
				continue // only the bindings the sweep made: a task of the base may fit nowhere
			}
			key := fmt.Sprint(pod.CPUMilli, pod.MemMiB, pod.NumGPU, pod.GPUMilli, pod.Models)
			ok, seen := fits[key]
			if !seen {
				d := pod.Demand()
				_, ok = (placement.FirstFit{}).Place(empty, &d)
				fits[key] = ok
			}
			if !ok {
				t.Fatalf("%s: task %s bound to %v fits no empty node", p.Name, pod.Name, pod.Models)
			}
		}
	}
}

// TestPairDiffsByHand: two policies' runs on two workloads, paired by seed.
func TestPairDiffsByHand(t *testing.T) {
	r := func(w, p string, seed int64, alloc int64) Result {
		return Result{Workload: w, Policy: p, Seed: seed, Capacity: 1000, Allocated: alloc}
	}
	// Unallocated: w1 a 10, 20, 30; b 12, 21, 30 (diffs -2, -1, 0); w2 a 50, b 40.
	rs := []Result{
		r("w1", "a", 1, 900), r("w1", "a", 2, 800), r("w1", "a", 3, 700),
		r("w1", "b", 1, 880), r("w1", "b", 2, 790), r("w1", "b", 3, 700),
		r("w2", "b", 1, 600), r("w2", "a", 1, 500), r("w2", "a", 9, 500),
	}
	got := PairDiffs(rs, "a", "b")
	if len(got) != 2 {
		t.Fatalf("%d workloads, want 2: %+v", len(got), got)
	}
	w1, w2 := got[0], got[1]
	if w1.Workload != "w1" || w1.Seeds != 3 || math.Abs(w1.Diff+1) > 1e-9 || math.Abs(w1.SE-1/math.Sqrt(3)) > 1e-9 || w1.ALower != 2 ||
		math.Abs(w1.MeanA-20) > 1e-9 || math.Abs(w1.MeanB-21) > 1e-9 {
		t.Errorf("w1: %+v, want 3 seeds, diff -1, se 0.577, a lower on 2, means 20 and 21", w1)
	}
	if w2.Workload != "w2" || w2.Seeds != 1 || math.Abs(w2.Diff-10) > 1e-9 || w2.SE != 0 || w2.ALower != 0 {
		t.Errorf("w2: %+v, want the one paired seed, diff +10, se 0", w2)
	}
}
