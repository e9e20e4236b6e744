package sim

import (
	"fmt"
	"math/rand"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// StreamSpec is a job stream for a lab of shared GPUs (test/steer/scale.sh): single-GPU
// tasks of a trace task list drawn with replacement, in shards of 1 GiB, with Poisson
// arrivals at the rate that offers Load times the lab's shards.
type StreamSpec struct {
	Jobs      int
	Seed      int64
	RefGiB    int64   // a task's GPU share is that share of a GPU of this size
	TimeScale float64 // the trace's run time is divided by it
	MinSec    int64   // run times are kept within MinSec..MaxSec
	MaxSec    int64
	Load      float64 // offered shard-seconds over the lab's
	Capacity  int64   // the lab's shards
	// Large is the share of jobs that ask a large slice instead: a size drawn evenly
	// from LargeMinGiB..LargeMaxGiB (the trace's shares of a 24 GiB GPU are mostly small;
	// steering matters where large requests wait behind small pieces).
	Large                    float64
	LargeMinGiB, LargeMaxGiB int64
}

// StreamJob is one submission of a stream: seconds after the first, shards, run time.
type StreamJob struct {
	Offset  float64
	Shards  int64
	Seconds int64
}

// DrawStream draws spec's stream from jobs (a task list with times, LoadJobs). The
// same spec and jobs give the same stream, so a lab run and its replay (ReplayStream)
// see the same submissions.
func DrawStream(jobs []Job, spec StreamSpec) ([]StreamJob, error) {
	if spec.Jobs < 1 || spec.RefGiB < 1 || spec.TimeScale <= 0 || spec.MinSec < 1 || spec.MaxSec < spec.MinSec ||
		spec.Load <= 0 || spec.Capacity < 1 || spec.Large < 0 || spec.Large > 1 {
		return nil, fmt.Errorf("sim: stream %+v: want jobs, ref, time scale, load and capacity positive, 1 <= min <= max run time, large in 0..1", spec)
	}
	if spec.Large > 0 && (spec.LargeMinGiB < 1 || spec.LargeMaxGiB < spec.LargeMinGiB) {
		return nil, fmt.Errorf("sim: large slices %d..%d GiB: want 1 <= min <= max", spec.LargeMinGiB, spec.LargeMaxGiB)
	}
	type task struct{ shards, secs int64 }
	var pool []task
	for _, j := range jobs {
		if j.Pod.NumGPU != 1 || j.Pod.GPUMilli <= 0 || j.Duration <= 0 {
			continue
		}
		secs := int64(float64(j.Duration)/spec.TimeScale + 0.5)
		pool = append(pool, task{(min(j.Pod.GPUMilli, trace.MilliPerGPU)*spec.RefGiB + 999) / 1000, min(max(secs, spec.MinSec), spec.MaxSec)})
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("sim: the task list has no single-GPU task with a run time")
	}
	r := rand.New(rand.NewSource(spec.Seed))
	out := make([]StreamJob, spec.Jobs)
	var shardSecs float64
	for i := range out {
		t := pool[r.Intn(len(pool))]
		if spec.Large > 0 && r.Float64() < spec.Large {
			t.shards = spec.LargeMinGiB + r.Int63n(spec.LargeMaxGiB-spec.LargeMinGiB+1)
		}
		out[i] = StreamJob{Shards: t.shards, Seconds: t.secs}
		shardSecs += float64(t.shards * t.secs)
	}
	// Little's law: arrivals x mean run time x mean shards = the shards offered.
	rate := spec.Load * float64(spec.Capacity) / (shardSecs / float64(spec.Jobs))
	at := 0.0
	for i := range out {
		out[i].Offset = at
		at += r.ExpFloat64() / rate
	}
	return out, nil
}

// LabGPU is one GPU of a lab: its node and how many shards it holds.
type LabGPU struct {
	Node   string
	Shards int64
}

// ReplayStream replays stream on the lab's GPUs with policy p, as ReplayQueue does a
// trace (FIFO with backfill, jobs ending on their own), in milliseconds so that the
// stream's sub-second arrivals keep their order. Only GPU memory is modelled: a lab
// node's CPUs and memory are left out, as the lab's jobs ask one CPU each. With queued
// set, a job that could not start at its submission is placed by queued when it starts:
// pinning's own reach, where job_submit pins only a job that fits now.
func ReplayStream(gpus []LabGPU, stream []StreamJob, p, queued placement.Policy) (QueueResult, error) {
	var nodes []placement.Node
	at := map[string]int{}
	for _, g := range gpus {
		i, ok := at[g.Node]
		if !ok {
			i = len(nodes)
			at[g.Node] = i
			nodes = append(nodes, placement.Node{Name: g.Node, CPU: 1 << 40, Mem: 1 << 40})
		}
		n := &nodes[i]
		n.Devices = append(n.Devices, placement.Device{GPU: len(n.Devices), Capacity: g.Shards, Shareable: true})
	}
	jobs := make([]Job, len(stream))
	for i, s := range stream {
		jobs[i] = Job{
			Pod:      trace.Pod{Name: fmt.Sprintf("job%d", i), NumGPU: 1, GPUMilli: s.Shards},
			Submit:   int64(s.Offset*1000 + 0.5),
			Duration: s.Seconds * 1000,
		}
	}
	r, err := replayQueue(nodes, jobs, p, queued, 1, 2)
	r.MeanWait, r.P95 = r.MeanWait/1000, r.P95/1000
	for i, w := range r.JobWaits {
		if w >= 0 {
			r.JobWaits[i] = w / 1000
		}
	}
	r.Span /= 1000
	return r, err
}
