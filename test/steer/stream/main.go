// Command stream draws test/steer/scale.sh's job stream from a trace task list and
// replays a stream in the simulator on the lab's own GPUs, so that the lab and the
// simulator see the same submissions.
//
//	stream draw -pods FILE -seed N -jobs N -capacity SHARDS [-load 1.2 -ref 24 -tscale 30 -dmin 5 -dmax 120 -large 0 -large-min 12 -large-max 40]
//	    one line a job: "offset shards seconds", offsets in seconds from the first
//	stream replay -gpus REPORT -stream FILE
//	    REPORT is `gpumemctl steer report -o json` of the empty lab; prints, for Slurm's
//	    first fit (native), gpumem's policy for every start, and gpumem's for the jobs
//	    that start as they come with first fit for the rest (at-submit: pinning's reach),
//	    one line: policy, started,
//	    mean and p95 wait (s), mean wait of the jobs under and over half the stream's
//	    largest size (s), allocation over the arrival span (%)
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/sim"
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
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: stream draw -pods FILE -seed N -jobs N -capacity SHARDS [...] | stream replay -gpus REPORT -stream FILE")
	os.Exit(2)
}

func draw(args []string) error {
	fs := flag.NewFlagSet("draw", flag.ExitOnError)
	var s sim.StreamSpec
	pods := fs.String("pods", "", "the trace task list (openb_pod_list_default.csv)")
	fs.Int64Var(&s.Seed, "seed", 42, "the stream's seed")
	fs.IntVar(&s.Jobs, "jobs", 600, "jobs in the stream")
	fs.Int64Var(&s.Capacity, "capacity", 0, "the lab's shards")
	fs.Float64Var(&s.Load, "load", 1.2, "offered shard-seconds over the lab's")
	fs.Int64Var(&s.RefGiB, "ref", 24, "a task's GPU share is that share of a GPU of this many GiB")
	fs.Float64Var(&s.TimeScale, "tscale", 30, "the trace's run times are divided by it")
	fs.Int64Var(&s.MinSec, "dmin", 5, "shortest run time, s")
	fs.Int64Var(&s.MaxSec, "dmax", 120, "longest run time, s")
	fs.Float64Var(&s.Large, "large", 0, "share of jobs asking a large slice instead")
	fs.Int64Var(&s.LargeMinGiB, "large-min", 12, "a large slice's smallest size, GiB")
	fs.Int64Var(&s.LargeMaxGiB, "large-max", 40, "a large slice's largest size, GiB")
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

func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	report := fs.String("gpus", "", "gpumemctl steer report -o json of the empty lab")
	streamFile := fs.String("stream", "", "a stream from stream draw")
	_ = fs.Parse(args)
	b, err := os.ReadFile(*report)
	if err != nil {
		return err
	}
	var rep struct {
		GPUs []struct {
			Node       string
			Used, Free int64
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", *report, err)
	}
	var gpus []sim.LabGPU
	for _, g := range rep.GPUs {
		gpus = append(gpus, sim.LabGPU{Node: g.Node, Shards: g.Used + g.Free})
	}
	f, err := os.Open(*streamFile)
	if err != nil {
		return err
	}
	defer f.Close()
	var stream []sim.StreamJob
	var sizes []int64
	var largest int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var j sim.StreamJob
		if _, err := fmt.Sscan(sc.Text(), &j.Offset, &j.Shards, &j.Seconds); err != nil {
			return fmt.Errorf("%s: %q: want offset shards seconds", *streamFile, sc.Text())
		}
		stream = append(stream, j)
		sizes = append(sizes, j.Shards)
		largest = max(largest, j.Shards)
	}
	shapes, err := placement.ShapesOfSizes(sizes)
	if err != nil {
		return err
	}
	// gpumem places every start; at-submit only the jobs that start as they come, as
	// job_submit pins only a job that fits now and leaves the rest to Slurm.
	for _, run := range []struct{ name, first, queued string }{
		{"first-fit", "first-fit", ""}, {placement.OursName, placement.OursName, ""}, {"at-submit", placement.OursName, "first-fit"},
	} {
		p, err := placement.ByName(run.first, 1, shapes...)
		if err != nil {
			return err
		}
		var queued placement.Policy
		if run.queued != "" {
			queued = placement.FirstFit{}
		}
		r, err := sim.ReplayStream(gpus, stream, p, queued)
		if err != nil {
			return err
		}
		var small, large [2]float64
		for i, w := range r.JobWaits {
			if w < 0 {
				continue
			}
			if 2*stream[i].Shards > largest {
				large[0] += w
				large[1]++
			} else {
				small[0] += w
				small[1]++
			}
		}
		fmt.Printf("%s %d %.1f %.1f %.1f %.1f %.1f\n", run.name, r.Started, r.MeanWait, r.P95,
			small[0]/max(small[1], 1), large[0]/max(large[1], 1), r.MeanAlloc)
	}
	return nil
}
