package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
	"github.com/gpumem/gpumem/internal/versioned"
)

func sweepAxisNames() string {
	names := make([]string, len(sim.SweepAxes))
	for i, a := range sim.SweepAxes {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// runSweep is simulate --sweep: the base workload moved along each axis, two policies
// run on the same arrivals at every point, and their paired difference printed.
func runSweep(out io.Writer, f *simulateFlags, spec sim.Spec) error {
	if len(spec.Workloads) != 1 {
		return usageError(fmt.Errorf("--sweep takes one base workload, got %d", len(spec.Workloads)))
	}
	if f.policies == "all" {
		spec.Policies = []string{"fgd", placement.OursName}
	}
	if len(spec.Policies) != 2 {
		return usageError(fmt.Errorf("--sweep compares two policies, got --policy %s", f.policies))
	}
	a, b := spec.Policies[1], spec.Policies[0]
	base := spec.Workloads[0].Name
	points := sim.SweepWorkloads(spec.Workloads[0], spec.Nodes, f.axes)
	spec.Workloads = spec.Workloads[:0]
	for _, p := range points {
		spec.Workloads = append(spec.Workloads, p.Workload)
	}
	spec.Limits = false
	start := time.Now()
	results, err := sim.Run(spec)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	diffs := sim.PairDiffs(results, a, b)
	type point struct {
		Axis string  `json:"axis"`
		X    float64 `json:"x"`
		sim.Paired
	}
	var pts []point
	worse := 0
	for i, p := range points {
		pts = append(pts, point{p.Axis, p.X, diffs[i]})
		if diffs[i].Diff > 0 {
			worse++
		}
	}
	if f.out.format == formatJSON {
		return writeJSON(out, map[string]any{"version": versioned.SimulateSweep.Current, "runs": len(results), "wall_seconds": wall.Seconds(),
			"seeds": spec.Seeds, "tune": spec.Tune, "base": base, "points": pts})
	}
	num := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	r := rows{head: []string{"axis", "x", b, a, a + "-" + b, "se", "t", a + "_lower"}}
	for _, p := range pts {
		t := ""
		if p.SE > 0 {
			t = num(p.Diff/p.SE, 1)
		}
		r.add(p.Axis, strconv.FormatFloat(p.X, 'g', -1, 64), num(p.MeanB, 2), num(p.MeanA, 2), num(p.Diff, 3), num(p.SE, 3), t,
			fmt.Sprintf("%d/%d", p.ALower, p.Seeds))
	}
	if err := r.write(out, f.out.format); err != nil || f.out.format == formatCSV {
		return err
	}
	_, err = fmt.Fprintf(out, "%s minus %s, unallocated GPU %% at %.0f%% arrived, paired over %d seeds (%d-%d); %s worse at %d of %d points; %d runs in %.1fs\n",
		a, b, spec.Tune*100, len(spec.Seeds), spec.Seeds[0], spec.Seeds[len(spec.Seeds)-1], a, worse, len(pts), len(results), wall.Seconds())
	return err
}
