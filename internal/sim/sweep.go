package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/trace"
)

// SweepAxis is one way of moving a workload away from the trace: the base's tasks
// changed by a factor or a share x, at points from below the trace's range to beyond it.
// The derived workloads of test/sim/variants.sh sample these axes at one or two points;
// a sweep walks each of them end to end.
type SweepAxis struct {
	Name   string
	What   string // what x means
	Points []float64
	// derive returns the base's tasks moved to x. Where it draws, it draws from rng,
	// seeded by the axis and x only, so a point's workload is the same for every run
	// seed and the runs of two policies stay paired.
	derive func(base []trace.Pod, nodes []trace.Node, x float64, rng *rand.Rand) []trace.Pod
}

// SweepAxes are the axes the derived workloads move, each from the least to beyond the
// most that the trace and its published and derived workloads show.
var SweepAxes = []SweepAxis{
	{"cpuonly", "CPU-only tasks, times the base's (the trace's mixes: up to about 2.8)", []float64{0, 0.5, 1, 2, 2.5, 3, 3.5, 4}, cpuOnlyTimes},
	{"cpupergpu", "CPU of every GPU task, times the base's (derived: 0.5-1.3)", []float64{0.5, 0.75, 1, 1.3, 1.6, 2}, scaleGPUTaskCPU},
	{"memory", "host memory of every task, times the base's (derived: 0.5-1.5)", []float64{0.5, 0.75, 1, 1.25, 1.5, 2}, scaleMemory},
	{"whole", "share of single-GPU tasks asking a whole GPU (the trace: 0-0.67)", []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, wholeShare},
	{"models", "share of GPU tasks bound to one GPU model (derived: 0.25-0.3)", []float64{0, 0.1, 0.25, 0.5, 0.75, 1}, boundToModel},
}

// ParseSweepAxes expands a comma-separated list of axis names, "all" for every axis.
func ParseSweepAxes(list string) ([]SweepAxis, error) {
	var out []SweepAxis
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, a := range SweepAxes {
			if name == "all" || name == a.Name {
				out, found = append(out, a), true
			}
		}
		if !found {
			names := make([]string, len(SweepAxes))
			for i, a := range SweepAxes {
				names[i] = a.Name
			}
			return nil, fmt.Errorf("unknown sweep axis %q, want one of %s or all", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// SweepPoint is one derived workload of a sweep.
type SweepPoint struct {
	Axis string
	X    float64
	Workload
}

// SweepWorkloads derives every point of the axes from base, named "BASE AXIS=X".
func SweepWorkloads(base Workload, nodes []trace.Node, axes []SweepAxis) []SweepPoint {
	var out []SweepPoint
	for ai, a := range axes {
		for _, x := range a.Points {
			rng := rand.New(rand.NewPCG(uint64(len(a.Name))<<32|uint64(ai), math.Float64bits(x)))
			name := base.Name + " " + a.Name + "=" + strconv.FormatFloat(x, 'g', -1, 64)
			out = append(out, SweepPoint{a.Name, x, Workload{name, a.derive(base.Pods, nodes, x, rng)}})
		}
	}
	return out
}

// mapPods is every task of base through f, on a copy.
func mapPods(base []trace.Pod, f func(p *trace.Pod)) []trace.Pod {
	out := make([]trace.Pod, len(base))
	copy(out, base)
	for i := range out {
		f(&out[i])
	}
	return out
}

// scaled is v times x, truncated as the derived workloads' awk does.
func scaled(v int64, x float64) int64 { return int64(float64(v) * x) }

// cpuOnlyTimes keeps every GPU task and each CPU-only task floor(x) times, once more with
// probability x - floor(x).
func cpuOnlyTimes(base []trace.Pod, _ []trace.Node, x float64, rng *rand.Rand) []trace.Pod {
	var out []trace.Pod
	for _, p := range base {
		if p.NumGPU > 0 {
			out = append(out, p)
			continue
		}
		k := int(x)
		if rng.Float64() < x-float64(k) {
			k++
		}
		for c := range k {
			q := p
			if c > 0 {
				q.Name = p.Name + "-" + strconv.Itoa(c)
			}
			out = append(out, q)
		}
	}
	return out
}

func scaleGPUTaskCPU(base []trace.Pod, _ []trace.Node, x float64, _ *rand.Rand) []trace.Pod {
	return mapPods(base, func(p *trace.Pod) {
		if p.NumGPU > 0 {
			p.CPUMilli = scaled(p.CPUMilli, x)
		}
	})
}

func scaleMemory(base []trace.Pod, _ []trace.Node, x float64, _ *rand.Rand) []trace.Pod {
	return mapPods(base, func(p *trace.Pod) { p.MemMiB = scaled(p.MemMiB, x) })
}

// wholeShare moves the single-GPU tasks to a share x asking a whole GPU, changing as
// few as it can: where x is above the base's share, shares become whole GPUs with the
// probability that reaches x; below it, whole GPUs become shares of a size drawn from
// the base's own shares.
func wholeShare(base []trace.Pod, _ []trace.Node, x float64, rng *rand.Rand) []trace.Pod {
	var shares []int64
	whole, single := 0, 0
	for i := range base {
		if base[i].NumGPU == 1 {
			single++
			if base[i].Shared() {
				shares = append(shares, base[i].GPUMilli)
			} else {
				whole++
			}
		}
	}
	if single == 0 {
		return mapPods(base, func(*trace.Pod) {})
	}
	cw := float64(whole) / float64(single)
	return mapPods(base, func(p *trace.Pod) {
		switch {
		case p.NumGPU != 1:
		case p.Shared() && x > cw && rng.Float64() < (x-cw)/(1-cw):
			p.GPUMilli = trace.MilliPerGPU
		case !p.Shared() && x < cw && len(shares) > 0 && rng.Float64() < (cw-x)/cw:
			p.GPUMilli = shares[rng.IntN(len(shares))]
		}
	})
}

// boundToModel binds a share x of the GPU tasks that have no model constraint to one
// model, drawn in proportion to the GPUs of the models with a node that could take the
// task when empty (so no task is made impossible by its binding).
func boundToModel(base []trace.Pod, nodes []trace.Node, x float64, rng *rand.Rand) []trace.Pod {
	return mapPods(base, func(p *trace.Pod) {
		if p.NumGPU == 0 || len(p.Models) > 0 || rng.Float64() >= x {
			return
		}
		gpus := map[string]int{}
		var models []string
		total := 0
		for _, n := range nodes {
			if n.GPUs >= p.NumGPU && n.CPUMilli >= p.CPUMilli && n.MemMiB >= p.MemMiB {
				if gpus[n.Model] == 0 {
					models = append(models, n.Model)
				}
				gpus[n.Model] += n.GPUs
				total += n.GPUs
			}
		}
		if total == 0 {
			return
		}
		r := rng.IntN(total)
		for _, m := range models {
			if r -= gpus[m]; r < 0 {
				p.Models = []string{m}
				return
			}
		}
	})
}

// Paired is one workload's paired difference of two policies over the same seeds: a
// minus b in points of unallocated GPU.
type Paired struct {
	Workload string  `json:"workload"`
	A        string  `json:"a"`
	B        string  `json:"b"`
	Seeds    int     `json:"seeds"`
	MeanA    float64 `json:"mean_a_pct"`
	MeanB    float64 `json:"mean_b_pct"`
	Diff     float64 `json:"diff_mean"`   // mean over seeds of a - b
	SE       float64 `json:"diff_stderr"` // its standard error (sd / sqrt(n), sd with n - 1)
	ALower   int     `json:"a_lower"`     // seeds where a left less unallocated
}

// PairDiffs pairs policy a's runs with b's (same workload and seed) in results, one
// Paired per workload, in the order the workloads first appear.
func PairDiffs(results []Result, a, b string) []Paired {
	type key struct {
		w    string
		seed int64
	}
	bs := map[key]float64{}
	for i := range results {
		if r := &results[i]; r.Policy == b {
			bs[key{r.Workload, r.Seed}] = r.Unallocated()
		}
	}
	var out []Paired
	at := map[string]int{}
	var diffs [][]float64
	for i := range results {
		r := &results[i]
		ub, ok := bs[key{r.Workload, r.Seed}]
		if r.Policy != a || !ok {
			continue
		}
		j, seen := at[r.Workload]
		if !seen {
			j = len(out)
			at[r.Workload] = j
			out = append(out, Paired{Workload: r.Workload, A: a, B: b})
			diffs = append(diffs, nil)
		}
		ua := r.Unallocated()
		p := &out[j]
		p.Seeds++
		p.MeanA += ua
		p.MeanB += ub
		if ua < ub {
			p.ALower++
		}
		diffs[j] = append(diffs[j], ua-ub)
	}
	for j := range out {
		p, n := &out[j], float64(out[j].Seeds)
		p.MeanA /= n
		p.MeanB /= n
		p.Diff, p.SE = MeanSE(diffs[j])
	}
	return out
}

// MeanSE is the mean of paired differences and its standard error (sd / sqrt(n), sd
// with n - 1; 0 for fewer than two).
func MeanSE(diffs []float64) (mean, se float64) {
	n := float64(len(diffs))
	for _, d := range diffs {
		mean += d / n
	}
	if n > 1 {
		var ss float64
		for _, d := range diffs {
			ss += (d - mean) * (d - mean)
		}
		se = math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	}
	return mean, se
}
