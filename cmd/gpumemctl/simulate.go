package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/sim"
	"github.com/gpumem/gpumem/internal/trace"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newSimulateCmd) }

type simulateFlags struct {
	data, nodes, curveCSV, plot, policies string
	sweep                                 string
	axes                                  []sim.SweepAxis // --sweep parsed
	out                                   *output
	progress                              func(done, total int) // nil: no progress line
	workloads                             []string
	seeds, workers                        int
	firstSeed                             int64
	tune, coverage                        float64
	limits, departures                    bool
	load                                  float64
	copies                                int
}

func newSimulateCmd() *cobra.Command {
	var f simulateFlags
	c := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a GPU-sharing trace with placement policies and compare them",
		Long: `Replays the Alibaba GPU-sharing trace (cluster-trace-gpu-v2023) the way Weng et al.
(USENIX ATC 2023) do: each workload's tasks plus draws from it up to --tune times the
cluster's GPU capacity arrive one by one in a seeded order, nothing departs, and each
policy places or drops each task. Prints the unallocated GPU share at the end, mean over
seeds (lower is better), beside the published figures where the trace folder has them.

The trace folder is --data, else $` + trace.DirEnv + `, else ../shared/data/alibaba-gpu-v2023
beside the repository. gpumem does not ship the trace (its owner grants research use,
not redistribution); get ` + trace.Source + `.
A small synthetic sample in the repository (node list and "default" workload only; its
figures are not the published ones) runs with
  --data ` + trace.SampleRel + ` --workload default
--workload takes files or the trace's workload names (default,
gpushare40, multigpu20, ...); by default the nine of the published comparison.

Beside the policies it prints, per workload, an offline reference (offline: the whole
arrival sequence planned in advance) and a proven lower bound on what any placement
leaves unallocated (bound), and each policy's gap to both (--limits=false omits them).
--departures replays instead the task lists' own submission and run times with a FIFO
queue and backfill, as Slurm schedules by default, and reports queue wait per policy;
--load and --copies make the queue fill.
--sweep moves one base workload (--workload, default "default") along each named axis
(CPU-only demand, CPU per GPU task, host memory, share of whole-GPU tasks, GPU model
bindings; all for every axis) from below the trace's range to beyond it, and prints at
every point the paired difference of two policies (--policy, default fgd,gpumem: the
second minus the first) over the seeds, mean and standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.progress = progressTo(cmd.ErrOrStderr())
			return runSimulate(cmd.OutOrStdout(), &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.data, "data", "", "trace folder (default: $"+trace.DirEnv+" or the shared data beside the repository)")
	fl.StringVar(&f.nodes, "nodes", "", "node list CSV (default: "+trace.NodesFile+" in the trace folder)")
	fl.StringSliceVar(&f.workloads, "workload", nil, "task list CSV files or workload names, comma-separated or repeated (default: the published nine)")
	fl.StringVar(&f.policies, "policy", "all", "comma-separated: "+strings.Join(sim.Policies, ", ")+", or all")
	fl.IntVar(&f.seeds, "seeds", 10, "number of seeds")
	fl.Int64Var(&f.firstSeed, "first-seed", 42, "first seed; the published runs use 42-51")
	fl.Float64Var(&f.tune, "tune", 1.3, "arrivals up to this multiple of GPU capacity")
	fl.Float64Var(&f.coverage, "coverage", 0.95, "share of tasks whose shapes make the fragmentation target")
	fl.BoolVar(&f.limits, "limits", true, "also the offline reference ("+sim.ReferenceName+") and the proven bound ("+sim.BoundName+") per seed, and each policy's gap to both")
	fl.BoolVar(&f.departures, "departures", false, "replay with the trace's own submission and run times instead: jobs queue when nothing fits, FIFO with backfill; reports queue wait (default and gpushare workloads only: the multigpu lists carry no times)")
	fl.Float64Var(&f.load, "load", 1, "with --departures, submissions this many times as dense (run times kept)")
	fl.IntVar(&f.copies, "copies", 1, "with --departures, submit every task this many times (n times the demand)")
	fl.StringVar(&f.sweep, "sweep", "", "sweep the base workload along these axes (comma-separated: "+sweepAxisNames()+", or all) and print paired differences")
	fl.IntVar(&f.workers, "workers", 0, "runs in parallel (default: one per CPU)")
	f.out = addOutput(fl, formatTable, formatJSON, formatCSV)
	fl.StringVar(&f.curveCSV, "curve-csv", "", "write every run's allocation curve (per whole % arrived) to this CSV")
	fl.StringVar(&f.plot, "plot", "", "draw the mean curves to this SVG file")
	return c
}

// progressTo is a progress line on w ("simulate: 12/90 runs", rewritten in place) when
// w is a terminal, nil otherwise: a log or a pipe gets only the result.
func progressTo(w io.Writer) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(done, total int) {
		end := ""
		if done == total {
			end = "\n"
		}
		fmt.Fprintf(f, "\rsimulate: %d/%d runs%s", done, total, end)
	}
}

func runSimulate(out io.Writer, f *simulateFlags) error {
	if f.seeds < 1 {
		return usageError(fmt.Errorf("--seeds %d: want at least 1", f.seeds))
	}
	if f.plot != "" && !strings.HasSuffix(strings.ToLower(f.plot), ".svg") {
		return usageError(fmt.Errorf("--plot %q: only SVG is drawn, want a name ending in .svg", f.plot))
	}
	policies, err := sim.ParsePolicies(f.policies)
	if err != nil {
		return usageError(fmt.Errorf("--policy: %w", err))
	}
	if f.sweep != "" {
		if f.axes, err = sim.ParseSweepAxes(f.sweep); err != nil {
			return usageError(fmt.Errorf("--sweep: %w", err))
		}
	}
	dir := f.data
	if dir == "" && (f.nodes == "" || len(f.workloads) == 0 || allTraceNames(f.workloads)) {
		if dir, err = trace.FindDir(); err != nil {
			return fmt.Errorf("%w (or pass --data, or --nodes and --workload files)", err)
		}
	}
	spec := sim.Spec{Policies: policies, Tune: f.tune, Coverage: f.coverage, Workers: f.workers, Limits: f.limits}
	nodesPath := f.nodes
	if nodesPath == "" {
		nodesPath = filepath.Join(dir, trace.NodesFile)
	}
	if spec.Nodes, err = trace.LoadNodes(nodesPath); err != nil {
		return err
	}
	names := f.workloads
	if len(names) == 0 {
		names = trace.Workloads
		if f.departures {
			names = timedWorkloads
		}
		if f.sweep != "" {
			names = []string{"default"}
		}
	}
	var seeds []int64
	for i := range f.seeds {
		seeds = append(seeds, f.firstSeed+int64(i))
	}
	if f.departures {
		return runDepartures(out, f, dir, names, seeds, spec)
	}
	for _, w := range names {
		wl, err := loadWorkload(dir, w)
		if err != nil {
			return err
		}
		spec.Workloads = append(spec.Workloads, wl)
	}
	spec.Seeds = seeds
	spec.Progress = f.progress
	if f.sweep != "" {
		return runSweep(out, f, spec)
	}
	start := time.Now()
	results, err := sim.Run(spec)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	sums := sim.Summarize(results)
	var published map[string]map[string]float64
	var publishedCurves map[string]map[string][]float64
	if dir != "" {
		if curves, err := trace.LoadCurves(filepath.Join(dir, trace.CurvesFile)); err == nil {
			published, publishedCurves = sim.Published(curves), sim.PublishedCurves(curves)
		}
	}
	if f.curveCSV != "" {
		if err := writeSimFile(f.curveCSV, func(w io.Writer) error { return sim.WriteCurveCSV(w, results) }); err != nil {
			return err
		}
	}
	if f.plot != "" {
		if err := writeSimFile(f.plot, func(w io.Writer) error { return sim.WriteSVG(w, sums, publishedCurves) }); err != nil {
			return err
		}
	}
	switch f.out.format {
	case formatJSON:
		return writeJSON(out, map[string]any{"version": versioned.Simulate.Current, "runs": len(results), "wall_seconds": wall.Seconds(), "seeds": spec.Seeds,
			"tune": spec.Tune, "results": sums, "published_unallocated_pct": published})
	case formatCSV:
		return simCSV(out, sums, published)
	}
	return printSimTable(out, spec, sums, published, len(results), wall)
}

// loadWorkload reads a --workload entry: a task list file or a trace workload's name.
func loadWorkload(dir, w string) (sim.Workload, error) {
	path := workloadPath(dir, w)
	pods, err := trace.LoadPods(path)
	if os.IsNotExist(err) && !strings.HasSuffix(w, ".csv") {
		return sim.Workload{}, fmt.Errorf("--workload %s: no %s in %s; want a .csv task list or a workload the folder has (%s, gpushare20, ...)", w, trace.WorkloadFile(w), dir, strings.Join(trace.Workloads, ", "))
	}
	if err != nil {
		return sim.Workload{}, fmt.Errorf("--workload %s: %w", w, err)
	}
	return sim.Workload{Name: trace.WorkloadName(path), Pods: pods}, nil
}

// simCSV prints one row per workload and policy: the means over seeds, beside the
// published figure where the trace has one (the curves are --curve-csv's).
func simCSV(out io.Writer, sums []sim.Summary, published map[string]map[string]float64) error {
	r := rows{head: []string{"workload", "policy", "seeds", "unallocated_pct", "unallocated_stddev", "frag_ratio_pct", "failed_tasks", "published_unallocated_pct"}}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) }
	for _, s := range sums {
		pub := ""
		if v, ok := published[s.Workload][s.Policy]; ok {
			pub = num(v)
		}
		r.add(s.Workload, s.Policy, strconv.Itoa(s.Seeds), num(s.Unallocated), num(s.StdDev), num(s.FragRatio), num(s.Failed), pub)
	}
	return r.write(out, formatCSV)
}

// allTraceNames reports whether every workload is a trace name rather than a file.
func allTraceNames(ws []string) bool {
	for _, w := range ws {
		if strings.HasSuffix(w, ".csv") {
			return false
		}
	}
	return true
}

func printSimTable(out io.Writer, spec sim.Spec, sums []sim.Summary, published map[string]map[string]float64, runs int, wall time.Duration) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := spec.Policies
	if spec.Limits {
		cols = append(slices.Clone(cols), sim.ReferenceName, sim.BoundName)
	}
	fmt.Fprintf(tw, "workload\t%s\t\n", strings.Join(cols, "\t"))
	byKey := map[[2]string]sim.Summary{}
	for _, s := range sums {
		byKey[[2]string{s.Workload, s.Policy}] = s
	}
	for _, w := range spec.Workloads {
		fmt.Fprintf(tw, "%s", w.Name)
		for _, p := range cols {
			fmt.Fprintf(tw, "\t%.2f", byKey[[2]string{w.Name, p}].Unallocated)
		}
		fmt.Fprintln(tw, "\t")
		if spec.Limits {
			// The gap is the policy's mean minus the limit's mean, in points of GPU.
			for _, limit := range []string{sim.ReferenceName, sim.BoundName} {
				fmt.Fprintf(tw, "  gap to %s", limit)
				for _, p := range spec.Policies {
					fmt.Fprintf(tw, "\t%+.2f", byKey[[2]string{w.Name, p}].Unallocated-byKey[[2]string{w.Name, limit}].Unallocated)
				}
				fmt.Fprintln(tw, "\t\t\t")
			}
		}
		if pub := published[w.Name]; anyPublished(pub, spec.Policies) {
			fmt.Fprintf(tw, "  published")
			for _, p := range cols {
				if v, ok := pub[p]; ok {
					fmt.Fprintf(tw, "\t%.2f", v)
				} else {
					fmt.Fprintf(tw, "\t-")
				}
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "unallocated GPU %% at %.0f%% arrived, mean of %d seeds (%d-%d); %d runs in %.1fs\n",
		spec.Tune*100, len(spec.Seeds), spec.Seeds[0], spec.Seeds[len(spec.Seeds)-1], runs, wall.Seconds())
	return err
}

func anyPublished(pub map[string]float64, policies []string) bool {
	for _, p := range policies {
		if _, ok := pub[p]; ok {
			return true
		}
	}
	return false
}

func writeSimFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// timedWorkloads are the trace's workloads whose task lists carry submission and
// deletion times, the default of --departures.
var timedWorkloads = []string{"default", "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100"}

// workloadPath is a --workload entry as a file: itself when it names a .csv, else the
// trace folder's file of that workload.
func workloadPath(dir, w string) string {
	if strings.HasSuffix(w, ".csv") {
		return w
	}
	return filepath.Join(dir, trace.WorkloadFile(w))
}

// runDepartures is simulate --departures: the replay with queueing (sim.ReplayQueue).
func runDepartures(out io.Writer, f *simulateFlags, dir string, names []string, seeds []int64, base sim.Spec) error {
	if f.load <= 0 {
		return fmt.Errorf("--load %g: want a positive factor such as 1 or 100", f.load)
	}
	if f.copies < 1 {
		return fmt.Errorf("--copies %d: want 1 or more", f.copies)
	}
	spec := sim.QueueSpec{Nodes: base.Nodes, Policies: base.Policies, Seeds: seeds, Load: f.load, Coverage: f.coverage, Points: 101, Workers: f.workers}
	for _, w := range names {
		path := workloadPath(dir, w)
		jobs, err := sim.LoadJobs(path)
		if err != nil {
			return fmt.Errorf("--workload %s: %w", w, err)
		}
		spec.Workloads = append(spec.Workloads, sim.QueueWorkload{Name: trace.WorkloadName(path), Jobs: sim.Replicate(jobs, f.copies)})
	}
	start := time.Now()
	sums, err := sim.RunQueue(spec)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if f.plot != "" {
		if err := writeSimFile(f.plot, func(w io.Writer) error { return sim.WriteQueueSVG(w, sums) }); err != nil {
			return err
		}
	}
	if f.out.format == formatJSON {
		return writeJSON(out, map[string]any{"version": versioned.SimulateDepartures.Current, "runs": len(sums) * len(seeds), "wall_seconds": wall.Seconds(), "seeds": seeds, "load": f.load, "results": sums})
	}
	num := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	r := rows{head: []string{"workload", "policy", "mean_wait_s", "p95_wait_s", "never_started", "backfilled", "mean_alloc_pct"}}
	for _, s := range sums {
		r.add(s.Workload, s.Policy, num(s.MeanWait, 1), num(s.P95Wait, 1), num(s.NeverStarted, 1), num(s.Backfilled, 1), num(s.MeanAlloc, 2))
	}
	if err := r.write(out, f.out.format); err != nil || f.out.format == formatCSV {
		return err
	}
	_, err = fmt.Fprintf(out, "with departures, submissions x%g, %d cop(ies) of each task, FIFO with backfill; mean of %d seeds (%d-%d); %d runs in %.1fs\n",
		f.load, f.copies, len(seeds), seeds[0], seeds[len(seeds)-1], len(sums)*len(seeds), wall.Seconds())
	return err
}
