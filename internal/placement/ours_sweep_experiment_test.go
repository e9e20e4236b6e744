package placement_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
	"github.com/gpumem/gpumem/internal/trace"
)

// sweepVariants are the policy variants TestOursSweep compares with FGD; a variant to
// try goes here (NewOursStrand and NewOursStep expose the knobs there are).
var sweepVariants = map[string]func(shapes []placement.Shape) placement.Policy{
	"gpumem":             func(sh []placement.Shape) placement.Policy { return placement.NewOurs(sh) },
	"without stranding":  func(sh []placement.Shape) placement.Policy { return placement.NewOursStrand(sh, true, 250) },
	"stranding, steps 1": func(sh []placement.Shape) placement.Policy { return placement.NewOursStrand(sh, false, 1) },
}

// TestOursSweep compares variants of Ours with FGD, paired, on the points of
// simulate --sweep (GPUMEM_SWEEP_POINTS, e.g. "cpuonly=3,memory=2"; default every point)
// of the default workload, on training seeds 1-10 (GPUMEM_SWEEP_SEEDS=N for 1-N), which
// the sweep's own table (seeds 42-51) does not use. GPUMEM_EXPERIMENT=1 runs it; each
// point prints every variant's mean paired difference with FGD and its standard error.
func TestOursSweep(t *testing.T) {
	dir, nodes, pn, capacity := experimentTrace(t)
	pods, err := trace.LoadPods(filepath.Join(dir, trace.WorkloadFile("default")))
	if err != nil {
		t.Fatal(err)
	}
	seeds := 10
	if s := os.Getenv("GPUMEM_SWEEP_SEEDS"); s != "" {
		if seeds, err = strconv.Atoi(s); err != nil || seeds < 2 {
			t.Fatalf("GPUMEM_SWEEP_SEEDS=%s: want a number of seeds from 2", s)
		}
	}
	want := os.Getenv("GPUMEM_SWEEP_POINTS")
	for _, p := range sim.SweepWorkloads(sim.Workload{Name: "default", Pods: pods}, nodes, sim.SweepAxes) {
		name := strings.TrimPrefix(p.Name, "default ")
		if want != "" && !strings.Contains(","+want+",", ","+name+",") {
			continue
		}
		target := sim.NewTarget(p.Pods, 0.95)
		var results []sim.Result
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan bool, 2) // the two cores
		for seed := int64(1); seed <= int64(seeds); seed++ {
			arr, err := sim.Arrivals(p.Pods, capacity, 1.3, seed)
			if err != nil {
				t.Fatal(err)
			}
			run := func(v string, pol placement.Policy) {
				defer wg.Done()
				sem <- true
				defer func() { <-sem }()
				r, err := sim.Replay(pn, arr, pol, target.Shapes, 131)
				if err != nil {
					t.Error(err)
					return
				}
				r.Workload, r.Policy, r.Seed = name, v, seed
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
			wg.Add(1 + len(sweepVariants))
			go run("fgd", placement.NewFGD(target.Shapes, uint64(seed)))
			for v, mk := range sweepVariants {
				go run(v, mk(target.WithMemory))
			}
		}
		wg.Wait()
		for v := range sweepVariants {
			for _, d := range sim.PairDiffs(results, v, "fgd") {
				t.Logf("%-14s %-20s %+.3f (%.3f), lower on %d/%d", name, v, d.Diff, d.SE, d.ALower, d.Seeds)
			}
		}
	}
}
