package sim

import (
	"cmp"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"

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

// StreamLimit is the time limit, in seconds, of a stream's job that runs secs seconds:
// what test/steer/scale.sh asks with sbatch -t, whole minutes, one more than the run
// time rounded up. The replays plan backfill by it, as the lab's Slurm does.
func StreamLimit(secs int64) int64 {
	return ((secs+59)/60 + 1) * 60
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
	return replayStream(gpus, stream, p, replayOpts{queued: queued})
}

// ReplayStreamPinned replays stream as the lab runs it with pinning (m): Slurm places
// with first fit, and p chooses the pins on the snapshot job_submit has read.
func ReplayStreamPinned(gpus []LabGPU, stream []StreamJob, p placement.Policy, m PinModel) (QueueResult, error) {
	return replayStream(gpus, stream, placement.FirstFit{}, replayOpts{pin: &m, pinPolicy: p})
}

// SlurmSched is how a slurmctld schedules, from its SchedulerParameters: a backfill
// pass every Backfill (bf_interval), its reservations rounded to Resolution
// (bf_resolution; Slurm's default is 60 s, which the lab keeps); and each node's CPUs,
// of which every job takes one, by which Slurm chooses among nodes of equal weight.
type SlurmSched struct {
	Backfill, Resolution time.Duration
	CPUs                 int64
	// BatchDelay, above 0, is batch_sched_delay (3 s unless set, as in the lab). sbatch
	// never starts a job itself (job_allocate with allocate 0 only queues it): a
	// submission asks for the main scheduler, which slurmctld's background thread
	// runs on such asks at most this often, while a job's end (its epilog's
	// completion) runs it at once. Jobs that fit as they come thus mostly wait for
	// the next backfill pass. 0: the main scheduler at every event, submissions too.
	BatchDelay time.Duration
}

// ReplayStreamSlurm replays stream with Slurm's own way of scheduling in place of the
// simulator's (slurm.go): the main scheduler at a job's end and every sc.BatchDelay
// for new jobs, in order only, and a backfill pass every sc.Backfill that reserves a
// node for each queued job it looks at.
// p places the jobs, or, nil, Slurm's own choice (slurmFit: best fit by free CPUs, the
// nodes in the order slurm.conf lists them, taken to be their names' natural order);
// with pin set, p pins as the lab does and Slurm places the rest.
func ReplayStreamSlurm(gpus []LabGPU, stream []StreamJob, p placement.Policy, pin *PinModel, sc SlurmSched) (QueueResult, error) {
	if sc.Backfill <= 0 || sc.Resolution < 0 || sc.CPUs < 1 || sc.BatchDelay < 0 {
		return QueueResult{}, fmt.Errorf("sim: backfill every %s, resolution %s, %d CPUs a node, batch delay %s: want a positive interval such as 1s, a resolution not negative (Slurm's default: 60s), CPUs, and a batch delay not negative (Slurm's default: 3s)", sc.Backfill, sc.Resolution, sc.CPUs, sc.BatchDelay)
	}
	o := replayOpts{backfillEvery: sc.Backfill.Milliseconds(), backfillResolution: sc.Resolution.Milliseconds(), cpus: sc.CPUs,
		batchDelay: sc.BatchDelay.Milliseconds()}
	if pin != nil {
		o.pin, o.pinPolicy, p = pin, p, nil
	}
	return replayStream(gpus, stream, p, o)
}

func replayStream(gpus []LabGPU, stream []StreamJob, p placement.Policy, o replayOpts) (QueueResult, error) {
	var nodes []placement.Node
	at := map[string]int{}
	cpus, cpu := int64(1<<40), int64(0) // CPUs unmodelled unless Slurm's choice counts them
	if o.cpus > 0 {
		cpus, cpu = o.cpus, 1
	}
	for _, g := range gpus {
		i, ok := at[g.Node]
		if !ok {
			i = len(nodes)
			at[g.Node] = i
			nodes = append(nodes, placement.Node{Name: g.Node, CPU: cpus, Mem: 1 << 40})
		}
		n := &nodes[i]
		// Each GPU its own type, as the lab's per-GPU shard types: a pin asks for it.
		model := fmt.Sprintf("%s_g%d", g.Node, len(n.Devices))
		n.Devices = append(n.Devices, placement.Device{GPU: len(n.Devices), Model: model, Capacity: g.Shards, Shareable: true})
	}
	jobs := make([]Job, len(stream))
	for i, s := range stream {
		jobs[i] = Job{
			Pod:      trace.Pod{Name: fmt.Sprintf("job%d", i), CPUMilli: cpu, NumGPU: 1, GPUMilli: s.Shards},
			Submit:   int64(s.Offset*1000 + 0.5),
			Duration: s.Seconds * 1000,
			Limit:    StreamLimit(s.Seconds) * 1000,
		}
	}
	if o.backfillEvery > 0 {
		o.slurmOrder = naturalOrder(nodes)
		o.jobsOn = jobsOn(nodes) // before slurmChoice: the policy keeps this count
	}
	if p == nil {
		p = o.slurmChoice()
	}
	r, err := replayQueue(nodes, jobs, p, o, 1, 2)
	r.MeanWait, r.P95 = r.MeanWait/1000, r.P95/1000
	for i, w := range r.JobWaits {
		if w >= 0 {
			r.JobWaits[i] = w / 1000
		}
	}
	r.Span /= 1000
	return r, err
}

// StreamFigures are a stream run's figures as test/steer/scale.sh takes them from the
// lab: only the jobs started by the horizon count, and GPU allocation is over a window.
type StreamFigures struct {
	Started, Pending     int
	MeanWait, P95        float64 // queue wait of the started jobs, s
	SmallWait, LargeWait float64 // mean wait of the started jobs up to and over half the largest request, s
	Alloc                float64 // % of the shards held from the first arrival to the horizon
	AllocSteady          float64 // the same from warm seconds after the first arrival: the fill from empty left out
}

// MeasureStream scores a replay of stream, each job's wait in seconds (-1: never
// started; ReplayStream's JobWaits), as the lab run is scored: the window runs from the
// first arrival to the last plus horizon seconds, and a job that started after it is
// pending. Why: the lab stops at its horizon with jobs still queued, and its first
// tens of seconds are the cluster filling from empty, the same in both modes; figures
// over every job and the arrival span alone are not the lab's.
func MeasureStream(stream []StreamJob, waits []float64, capacity int64, horizon, warm float64) (StreamFigures, error) {
	var f StreamFigures
	if len(stream) == 0 || len(waits) != len(stream) || capacity < 1 || horizon < 0 || warm < 0 {
		return f, fmt.Errorf("sim: measure %d jobs with %d waits on %d shards, horizon %g s, warm-up %g s: want a wait a job, shards, and times not negative",
			len(stream), len(waits), capacity, horizon, warm)
	}
	first, end, largest := stream[0].Offset, stream[0].Offset, int64(0)
	for _, j := range stream {
		first, end, largest = min(first, j.Offset), max(end, j.Offset), max(largest, j.Shards)
	}
	end += horizon
	if first+warm >= end {
		return f, fmt.Errorf("sim: warm-up %g s leaves nothing of the %g s window", warm, end-first)
	}
	var started []float64
	var held, heldSteady float64
	var sum, n [2]float64
	for i, j := range stream {
		start := j.Offset + waits[i]
		if waits[i] < 0 || start > end {
			f.Pending++
			continue
		}
		started = append(started, waits[i])
		k := 0
		if 2*j.Shards > largest {
			k = 1
		}
		sum[k] += waits[i]
		n[k]++
		stop := min(start+float64(j.Seconds), end)
		held += float64(j.Shards) * (stop - start)
		heldSteady += float64(j.Shards) * max(stop-max(start, first+warm), 0)
	}
	f.Started = len(started)
	f.MeanWait, f.P95 = meanP95(started)
	f.SmallWait, f.LargeWait = sum[0]/max(n[0], 1), sum[1]/max(n[1], 1)
	f.Alloc = 100 * held / float64(capacity) / (end - first)
	f.AllocSteady = 100 * heldSteady / float64(capacity) / (end - first - warm)
	return f, nil
}

// naturalOrder orders the nodes by name with their numbers as numbers (s2 before s10),
// the order a slurm.conf written from host ranges lists them in, where the GPU report
// sorts them as strings.
func naturalOrder(nodes []placement.Node) []int {
	split := func(name string) (string, int, bool) {
		i := len(name)
		for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(name[i:])
		return name[:i], n, err == nil
	}
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, na, oka := split(nodes[a].Name)
		pb, nb, okb := split(nodes[b].Name)
		if pa != pb || !oka || !okb {
			return strings.Compare(nodes[a].Name, nodes[b].Name)
		}
		return cmp.Compare(na, nb)
	})
	return order
}
