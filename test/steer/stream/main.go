// Command stream draws test/steer/scale.sh's job stream from a trace task list and
// replays a stream in the simulator on the lab's own GPUs, so that the lab and the
// simulator see the same submissions.
//
//	stream draw -pods FILE -seed N -jobs N -capacity SHARDS [-load 1.2 -ref 24 -tscale 30 -dmin 5 -dmax 120 -large 0 -large-min 12 -large-max 40]
//	    one line a job: "offset shards seconds", offsets in seconds from the first
//	stream replay -gpus REPORT -stream FILE [-horizon 60 -warm 60 -interval 2s -reload 2s -unpin 20s -slurm-backfill 0 -slurm-resolution 60s -slurm-cpus 64 -slurm-batch-delay 3s -weights -waits DIR]
//	    REPORT is `gpumemctl steer report -o json` of the empty lab. One line for each
//	    of: Slurm's first fit (native); gpumem's policy for every start; gpumem's for
//	    the jobs that start as they come, first fit for the rest (at-submit: pinning's
//	    reach); the lab's pinning (pinned: sim.PinModel, a snapshot every -interval read
//	    up to -reload later, pins taken back after -unpin). Each scored as the lab's run
//	    (sim.MeasureStream: the window ends -horizon seconds after the last arrival):
//	    policy, started, pending, mean and p95 wait (s), mean wait of the jobs up to and
//	    over half the stream's largest size (s), allocation over the window and from
//	    -warm seconds into it (%), pins made and taken back. With -slurm-backfill,
//	    Slurm's own choice of node (native: best fit by free CPUs, -slurm-cpus a
//	    node), gpumem and the lab's pinning again with Slurm's way of scheduling
//	    (sim.ReplayStreamSlurm: in order at a job's end and, for new jobs, every
//	    -slurm-batch-delay; a backfill pass that reserves a node for every queued job
//	    every so often, rounded to -slurm-resolution), as
//	    slurm-* lines. With -weights, the pinned replays place the jobs Slurm starts
//	    unpinned by steer's node weights (its ranking at each snapshot, steer.Order),
//	    as the lab's Slurm does.
//	stream pins -gpus REPORT -pods FILE [draw's flags] [-seeds 42,...,51 -views 2s/2s,... -unpins 20s,... -slurm-backfill 0 -slurm-resolution 60s -weights]
//	    the lab's pinning against first fit at each interval/reload and unpin-after,
//	    paired over the seeds' streams (see pins); with -slurm-backfill, both scheduled
//	    as Slurm does; with -weights, Slurm places the unpinned jobs by steer's ranking
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
	"github.com/gpumem/gpumem/internal/steer"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "draw":
		err = draw(os.Args[2:])
	case "replay":
		err = replay(os.Args[2:])
	case "pins":
		err = pins(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: stream draw -pods FILE -seed N -jobs N -capacity SHARDS [...] | stream replay -gpus REPORT -stream FILE [...] | stream pins -gpus REPORT -pods FILE [...]")
	os.Exit(2)
}

func draw(args []string) error {
	fs := flag.NewFlagSet("draw", flag.ExitOnError)
	var s sim.StreamSpec
	pods := specFlags(fs, &s)
	fs.Int64Var(&s.Seed, "seed", 42, "the stream's seed")
	fs.Int64Var(&s.Capacity, "capacity", 0, "the lab's shards")
	_ = fs.Parse(args)
	jobs, err := sim.LoadJobs(*pods)
	if err != nil {
		return err
	}
	stream, err := sim.DrawStream(jobs, s)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	for _, j := range stream {
		fmt.Fprintf(w, "%.3f %d %d\n", j.Offset, j.Shards, j.Seconds)
	}
	return w.Flush()
}

// specFlags defines the flags of a stream's spec but its seed and capacity, and returns
// the task list's flag.
func specFlags(fs *flag.FlagSet, s *sim.StreamSpec) *string {
	pods := fs.String("pods", "", "the trace task list (openb_pod_list_default.csv)")
	fs.IntVar(&s.Jobs, "jobs", 600, "jobs in the stream")
	fs.Float64Var(&s.Load, "load", 1.2, "offered shard-seconds over the lab's")
	fs.Int64Var(&s.RefGiB, "ref", 24, "a task's GPU share is that share of a GPU of this many GiB")
	fs.Float64Var(&s.TimeScale, "tscale", 30, "the trace's run times are divided by it")
	fs.Int64Var(&s.MinSec, "dmin", 5, "shortest run time, s")
	fs.Int64Var(&s.MaxSec, "dmax", 120, "longest run time, s")
	fs.Float64Var(&s.Large, "large", 0, "share of jobs asking a large slice instead")
	fs.Int64Var(&s.LargeMinGiB, "large-min", 12, "a large slice's smallest size, GiB")
	fs.Int64Var(&s.LargeMaxGiB, "large-max", 40, "a large slice's largest size, GiB")
	return pods
}

// loadGPUs reads the lab's GPUs from `gpumemctl steer report -o json` of the empty lab.
func loadGPUs(report string) (gpus []sim.LabGPU, capacity int64, err error) {
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, 0, err
	}
	var rep struct {
		GPUs []struct {
			Node       string
			Used, Free int64
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", report, err)
	}
	for _, g := range rep.GPUs {
		gpus = append(gpus, sim.LabGPU{Node: g.Node, Shards: g.Used + g.Free})
		capacity += g.Used + g.Free
	}
	if capacity == 0 {
		return nil, 0, fmt.Errorf("%s: no GPU with shards", report)
	}
	return gpus, capacity, nil
}

func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	report := fs.String("gpus", "", "gpumemctl steer report -o json of the empty lab")
	streamFile := fs.String("stream", "", "a stream from stream draw")
	horizon := fs.Float64("horizon", 60, "seconds after the last arrival the window ends, as the lab's run")
	warm := fs.Float64("warm", 60, "seconds after the first arrival the steady allocation starts")
	var m sim.PinModel
	fs.DurationVar(&m.Interval, "interval", 2*time.Second, "pinned: steer's --interval")
	fs.DurationVar(&m.Reload, "reload", 2*time.Second, "pinned: gpumem.conf's ReloadInterval")
	fs.DurationVar(&m.UnpinAfter, "unpin", 20*time.Second, "pinned: steer's --unpin-after")
	slurmBF := slurmFlags(fs, "above 0: also replay first fit, gpumem and the lab's pinning with Slurm's scheduling, backfill this often (slurm-* lines)")
	weights := fs.Bool("weights", false, "pinned: Slurm places the unpinned jobs by steer's node weights (its ranking at each snapshot), as in the lab, not in node order")
	waitsDir := fs.String("waits", "", "a folder to write each replay's waits in, RUN.waits: one line a job of the stream, its wait in seconds (-1: never started)")
	_ = fs.Parse(args)
	gpus, capacity, err := loadGPUs(*report)
	if err != nil {
		return err
	}
	f, err := os.Open(*streamFile)
	if err != nil {
		return err
	}
	defer f.Close()
	var stream []sim.StreamJob
	var sizes []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var j sim.StreamJob
		if _, err := fmt.Sscan(sc.Text(), &j.Offset, &j.Shards, &j.Seconds); err != nil {
			return fmt.Errorf("%s: %q: want offset shards seconds", *streamFile, sc.Text())
		}
		stream = append(stream, j)
		sizes = append(sizes, j.Shards)
	}
	shapes, err := placement.ShapesOfSizes(sizes)
	if err != nil {
		return err
	}
	if *weights {
		m.Rank = steerRank(shapes)
	}
	// gpumem places every start; at-submit only the jobs that start as they come, as
	// job_submit pins only a job that fits now and leaves the rest to Slurm.
	// pinned pins as the lab does.
	runs := []struct{ name, first, queued string }{
		{"first-fit", "first-fit", ""}, {placement.OursName, placement.OursName, ""}, {"at-submit", placement.OursName, "first-fit"},
		{"pinned", placement.OursName, ""},
	}
	if slurmBF.Backfill > 0 {
		runs = append(runs, struct{ name, first, queued string }{"slurm-native", "", ""},
			struct{ name, first, queued string }{"slurm-" + placement.OursName, placement.OursName, ""},
			struct{ name, first, queued string }{"slurm-pinned", placement.OursName, ""})
	}
	for _, run := range runs {
		var p placement.Policy // nil: Slurm's own choice
		if run.first != "" {
			if p, err = placement.ByName(run.first, 1, shapes...); err != nil {
				return err
			}
		}
		var r sim.QueueResult
		switch {
		case run.name == "slurm-pinned":
			r, err = sim.ReplayStreamSlurm(gpus, stream, p, &m, *slurmBF)
		case strings.HasPrefix(run.name, "slurm-"):
			r, err = sim.ReplayStreamSlurm(gpus, stream, p, nil, *slurmBF)
		case run.name == "pinned":
			r, err = sim.ReplayStreamPinned(gpus, stream, p, m)
		case run.queued != "":
			r, err = sim.ReplayStream(gpus, stream, p, placement.FirstFit{})
		default:
			r, err = sim.ReplayStream(gpus, stream, p, nil)
		}
		if err != nil {
			return err
		}
		f, err := sim.MeasureStream(stream, r.JobWaits, capacity, *horizon, *warm)
		if err != nil {
			return err
		}
		if *waitsDir != "" {
			var b strings.Builder
			for _, w := range r.JobWaits {
				fmt.Fprintf(&b, "%.3f\n", w)
			}
			if err := os.WriteFile(filepath.Join(*waitsDir, run.name+".waits"), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
		fmt.Printf("%s %d %d %.1f %.1f %.1f %.1f %.1f %.1f %d %d\n", run.name, f.Started, f.Pending, f.MeanWait, f.P95,
			f.SmallWait, f.LargeWait, f.Alloc, f.AllocSteady, r.Pinned, r.Unpinned)
	}
	return nil
}

// slurmFlags are -slurm-backfill (use says what it does), -slurm-resolution,
// -slurm-cpus and -slurm-batch-delay: the lab's bf_interval, bf_resolution, CPUs a node
// and batch_sched_delay.
func slurmFlags(fs *flag.FlagSet, use string) *sim.SlurmSched {
	var sc sim.SlurmSched
	fs.DurationVar(&sc.Backfill, "slurm-backfill", 0, use)
	fs.DurationVar(&sc.Resolution, "slurm-resolution", time.Minute, "with -slurm-backfill: backfill's reservations are rounded to this (bf_resolution; the lab keeps Slurm's default)")
	fs.Int64Var(&sc.CPUs, "slurm-cpus", 64, "with -slurm-backfill: each node's CPUs (the 64-node lab's), one a job, by which Slurm chooses among nodes of equal weight")
	fs.DurationVar(&sc.BatchDelay, "slurm-batch-delay", 3*time.Second, "with -slurm-backfill: batch_sched_delay (the lab keeps Slurm's default): a submission asks for the main scheduler, which runs on such asks at most this often; a job's end runs it at once. 0: at every event")
	return &sc
}

// steerRank is gpumemctl steer's ranking of the nodes for the stream's sizes, with
// gpumem's policy, as scale.sh runs it (--policy gpumem --sizes the stream's).
func steerRank(shapes []placement.Shape) func(*placement.State, []placement.Demand) []int {
	return func(s *placement.State, queue []placement.Demand) []int {
		return steer.Order(s, queue, shapes, func() placement.Policy {
			p, _ := placement.ByName(placement.OursName, 1, shapes...)
			return p
		})
	}
}

// pins sweeps the lab's pinning in the simulator (sim.PinModel) over how stale
// job_submit's view is (steer's interval and the plugin's reload interval) and how long a
// pin may wait (unpin-after), on streams drawn as scale.sh draws them, one per seed:
// for each point, the paired difference with first fit (mean ± standard error over the
// seeds) of the steady allocation and of the large requests' mean wait, the p95 wait,
// and the pins made and taken back a run. With -slurm-backfill both sides schedule as
// Slurm does (sim.ReplayStreamSlurm), 6-9 s a replay at 600 jobs instead of well under one.
func pins(args []string) error {
	fs := flag.NewFlagSet("pins", flag.ExitOnError)
	var s sim.StreamSpec
	pods := specFlags(fs, &s)
	report := fs.String("gpus", "", "gpumemctl steer report -o json of the empty lab")
	seeds := fs.String("seeds", "42,43,44,45,46,47,48,49,50,51", "the streams' seeds")
	views := fs.String("views", "0.5s/0.5s,1s/1s,2s/2s,4s/4s,8s/8s", "steer's interval/the plugin's reload interval, a list")
	unpins := fs.String("unpins", "5s,10s,20s,40s,0s", "unpin-after values, a list (0s: never)")
	horizon := fs.Float64("horizon", 60, "seconds after the last arrival the window ends, as the lab's run")
	warm := fs.Float64("warm", 60, "seconds after the first arrival the steady allocation starts")
	slurmBF := slurmFlags(fs, "above 0: schedule as Slurm does, backfill this often (sim.ReplayStreamSlurm), first fit and pinning alike")
	weights := fs.Bool("weights", false, "Slurm places the unpinned jobs by steer's node weights, as in the lab, not in node order")
	_ = fs.Parse(args)
	gpus, capacity, err := loadGPUs(*report)
	if err != nil {
		return err
	}
	s.Capacity = capacity
	replay := func(stream []sim.StreamJob, p placement.Policy, m *sim.PinModel) (sim.QueueResult, error) {
		switch {
		case slurmBF.Backfill > 0:
			return sim.ReplayStreamSlurm(gpus, stream, p, m, *slurmBF)
		case m != nil:
			return sim.ReplayStreamPinned(gpus, stream, p, *m)
		}
		return sim.ReplayStream(gpus, stream, p, nil)
	}
	jobs, err := sim.LoadJobs(*pods)
	if err != nil {
		return err
	}
	var points []sim.PinModel
	for _, v := range strings.Split(*views, ",") {
		iv, rl, ok := strings.Cut(v, "/")
		i, err1 := time.ParseDuration(iv)
		r, err2 := time.ParseDuration(rl)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("-views %q: want interval/reload such as 2s/2s", v)
		}
		for _, u := range strings.Split(*unpins, ",") {
			d, err := time.ParseDuration(u)
			if err != nil {
				return fmt.Errorf("-unpins %q: want a duration such as 20s", u)
			}
			points = append(points, sim.PinModel{Interval: i, Reload: r, UnpinAfter: d})
		}
	}
	type diffs struct{ alloc, large, p95, made, taken []float64 }
	ds := make([]diffs, len(points))
	for _, f := range strings.Split(*seeds, ",") {
		seed, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds %q: want whole numbers", f)
		}
		s.Seed = seed
		stream, err := sim.DrawStream(jobs, s)
		if err != nil {
			return err
		}
		var sizes []int64
		for _, j := range stream {
			sizes = append(sizes, j.Shards)
		}
		shapes, err := placement.ShapesOfSizes(sizes)
		if err != nil {
			return err
		}
		var native placement.Policy = placement.FirstFit{}
		if slurmBF.Backfill > 0 {
			native = nil // Slurm's own choice
		}
		ff, err := replay(stream, native, nil)
		if err != nil {
			return err
		}
		base, err := sim.MeasureStream(stream, ff.JobWaits, capacity, *horizon, *warm)
		if err != nil {
			return err
		}
		for i, m := range points {
			p, err := placement.ByName(placement.OursName, 1, shapes...)
			if err != nil {
				return err
			}
			if *weights {
				m.Rank = steerRank(shapes)
			}
			r, err := replay(stream, p, &m)
			if err != nil {
				return err
			}
			f, err := sim.MeasureStream(stream, r.JobWaits, capacity, *horizon, *warm)
			if err != nil {
				return err
			}
			d := &ds[i]
			d.alloc = append(d.alloc, f.AllocSteady-base.AllocSteady)
			d.large = append(d.large, f.LargeWait-base.LargeWait)
			d.p95 = append(d.p95, f.P95-base.P95)
			d.made = append(d.made, float64(r.Pinned))
			d.taken = append(d.taken, float64(r.Unpinned))
		}
	}
	fmt.Printf("%-9s %-7s %-7s %14s %14s %14s %6s %6s\n", "interval", "reload", "unpin", "d_alloc_steady", "d_wait_large", "d_wait_p95", "pins", "taken")
	for i, m := range points {
		d := ds[i]
		fmt.Printf("%-9s %-7s %-7s %14s %14s %14s %6.0f %6.0f\n", m.Interval, m.Reload, m.UnpinAfter,
			meanSE(d.alloc), meanSE(d.large), meanSE(d.p95), avg(d.made), avg(d.taken))
	}
	return nil
}

// meanSE is "mean±standard error" of paired differences.
func meanSE(xs []float64) string {
	m, se := sim.MeanSE(xs)
	return fmt.Sprintf("%+.1f±%.1f", m, se)
}

func avg(xs []float64) float64 {
	m, _ := sim.MeanSE(xs)
	return m
}
