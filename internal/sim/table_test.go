package sim

import (
	"os"
	"testing"
	"time"
)

// TestTableOnTrace prints a small table on the real trace; GPUMEM_FULL_TABLE=1 runs the
// whole published comparison (9 workloads x 6 policies x 10 seeds).
func TestTableOnTrace(t *testing.T) {
	dir, nodes := sharedTrace(t)
	spec := Spec{Nodes: nodes, Policies: Policies, Seeds: []int64{42}, Tune: 1.3, Coverage: 0.95}
	names := []string{"default"}
	if os.Getenv("GPUMEM_FULL_TABLE") != "" {
		names = []string{"default", "gpushare40", "gpushare60", "gpushare80", "gpushare100", "multigpu20", "multigpu30", "multigpu40", "multigpu50"}
		spec.Seeds = []int64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}
	}
	for _, n := range names {
		spec.Workloads = append(spec.Workloads, workload(t, dir, n))
	}
	start := time.Now()
	rs, err := Run(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Summarize(rs) {
		t.Logf("%-12s %-12s unalloc %6.2f ±%.2f frag %5.2f failed %6.0f  %.0f ms/run", s.Workload, s.Policy, s.Unallocated, s.StdDev, s.FragRatio, s.Failed, s.WallMS)
	}
	t.Logf("%d runs in %v", len(rs), time.Since(start))
}
