package sim

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// Workload is a named task list.
type Workload struct {
	Name string
	Pods []trace.Pod
}

// Spec is a table to compute: every workload with every policy and seed.
type Spec struct {
	Nodes     []trace.Node
	Workloads []Workload
	Policies  []string
	Seeds     []int64
	Tune      float64 // arrivals up to tune x capacity; the paper uses 1.3
	Coverage  float64 // share of tasks the target shapes cover; the paper uses 0.95
	Workers   int     // parallel runs; 0 = the CPUs Go may use
	Limits    bool    // also the offline reference and the bound, per workload and seed
	// Progress, when set, is told after each run how many of all are done; it is
	// called from the workers, one call at a time, done rising by one each call.
	Progress func(done, total int)
}

// rows is the policies' names and, with Limits, the reference's and the bound's after
// them, as the results carry them.
func (spec *Spec) rows() []string {
	names := slices.Clone(spec.Policies)
	if spec.Limits {
		names = append(names, ReferenceName, BoundName)
	}
	return names
}

// Run computes the table, runs spread over the workers. Results come back in the order
// workload, policy, seed, whatever order they finished in.
func Run(spec Spec) ([]Result, error) {
	if len(spec.Workloads) == 0 || len(spec.Policies) == 0 || len(spec.Seeds) == 0 {
		return nil, fmt.Errorf("sim: need at least one workload, policy and seed")
	}
	nodes := trace.PlacementNodes(spec.Nodes)
	capacity := int64(trace.TotalGPUs(spec.Nodes)) * trace.MilliPerGPU
	points := int(spec.Tune*100) + 1
	type job struct {
		w, p, s int
		target  *Target
		arr     []trace.Pod
	}
	var jobs []job
	for wi, w := range spec.Workloads {
		target := NewTarget(w.Pods, spec.Coverage)
		for si, seed := range spec.Seeds {
			arr, err := Arrivals(w.Pods, capacity, spec.Tune, seed)
			if err != nil {
				return nil, fmt.Errorf("workload %s: %w", w.Name, err)
			}
			for pi := range spec.rows() {
				jobs = append(jobs, job{wi, pi, si, target, arr})
			}
		}
	}
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	// The online placement that allocated most, per workload and seed (the first
	// policy in the table's order on a tie), where the offline reference starts.
	type start struct {
		p     int
		alloc int64
		plan  []placement.Choice
	}
	starts := make([]start, len(spec.Workloads)*len(spec.Seeds))
	for i := range starts {
		starts[i].p = -1
	}
	var mu sync.Mutex
	done := 0
	run := func(i int) {
		if spec.Progress != nil {
			defer func() {
				mu.Lock()
				done++
				spec.Progress(done, len(jobs))
				mu.Unlock()
			}()
		}
		j := jobs[i]
		seed := spec.Seeds[j.s]
		at := &starts[j.w*len(spec.Seeds)+j.s]
		var err error
		switch name := spec.rows()[j.p]; name {
		case BoundName:
			// Runs beside the policies, so it must not read the start they write.
			results[i], err = limit(name, nodes, j.arr, nil)
		case ReferenceName:
			// Runs after every policy (below), so their best plan is final.
			results[i], err = limit(name, nodes, j.arr, at.plan)
		default:
			var p placement.Policy
			var plan []placement.Choice
			if p, err = NewPolicy(name, j.target, seed); err == nil {
				results[i], plan, err = ReplayPlan(nodes, j.arr, p, j.target.Shapes, points)
			}
			if err == nil && spec.Limits {
				mu.Lock()
				if a := results[i].Allocated; at.p < 0 || a > at.alloc || (a == at.alloc && j.p < at.p) {
					*at = start{j.p, a, plan}
				}
				mu.Unlock()
			}
		}
		results[i].Workload, results[i].Seed = spec.Workloads[j.w].Name, seed
		errs[i] = err
	}
	// The reference needs every policy's run of its arrivals: it runs after them.
	var first, second []int
	for i, j := range jobs {
		if spec.rows()[j.p] == ReferenceName {
			second = append(second, i)
		} else {
			first = append(first, i)
		}
	}
	parallel(len(first), spec.Workers, func(k int) { run(first[k]) })
	parallel(len(second), spec.Workers, func(k int) { run(second[k]) })
	for i, err := range errs {
		if err != nil {
			j := jobs[i]
			return nil, fmt.Errorf("%s / %s / seed %d: %w", spec.Workloads[j.w].Name, spec.rows()[j.p], spec.Seeds[j.s], err)
		}
	}
	// Rows ordered workload, policy, seed, as tables read.
	ordered := make([]Result, 0, len(results))
	for wi := range spec.Workloads {
		for pi := range spec.rows() {
			for i, j := range jobs {
				if j.w == wi && j.p == pi {
					ordered = append(ordered, results[i])
				}
			}
		}
	}
	return ordered, nil
}

// boundIters and patternIters are the bounds' multiplier searches: every iterate is a
// valid bound, more only tighten it. The pattern bound's 2000 steps cost about 0.3 s
// per arrival sequence.
const (
	boundIters   = 60
	patternIters = 2000
)

// limit is one arrival sequence's offline reference or bound, as a Result without a
// curve (neither places in arrival order); the reference starts also from plan (nil:
// no policy ran).
func limit(name string, nodes []placement.Node, arr []trace.Pod, plan []placement.Choice) (Result, error) {
	start := time.Now()
	r := Result{Policy: name, Tasks: len(arr)}
	ds := make([]placement.Demand, len(arr))
	for i := range arr {
		ds[i] = arr[i].Demand()
		r.Arrived += arr[i].GPUDemand()
	}
	for _, n := range nodes {
		r.Capacity += int64(len(n.Devices)) * trace.MilliPerGPU
	}
	if name == BoundName {
		// Both are proven bounds, so the lesser is one too; the pattern bound is the
		// tighter wherever shares or per-node limits matter.
		r.Allocated = int64(math.Ceil(math.Min(AllocBound(nodes, ds, boundIters), PatternBound(nodes, ds, patternIters))))
	} else {
		s, placed, err := Reference(nodes, ds, plan)
		if err != nil {
			return r, err
		}
		r.Allocated = allocated(s)
		for _, ok := range placed {
			if !ok {
				r.Failed++
			}
		}
	}
	r.Wall = time.Since(start)
	return r, nil
}

// parallel calls run(0..n-1) over workers goroutines (0 = the CPUs Go may use).
func parallel(n, workers int, run func(int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				run(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
