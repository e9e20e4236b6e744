package sim

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// TestQueueWaitsByHand: one node (6 CPU, 10 memory, one GPU) and six jobs whose
// schedule is worked out by hand, FIFO with backfill:
//
//	t0  A (GPU, mem 1, runs 10) starts.
//	t1  B (GPU, mem 5, runs 5) waits for A: the head, earliest start 10.
//	t2  C (mem 4, runs 20) backfills: it outlives 10 but fits beside B then (5+4).
//	t3  D (mem 4, runs 100) fits now (1+4+4) but not beside B and C at 10 (13): waits.
//	t4  E (mem 4, runs 3) backfills: it ends at 7, before B's start.
//	t5  F (2 GPUs) fits no node, even empty: never started.
//	t10 A ends, B starts (wait 9); D is the head, fits once B ends at 15.
//	t15 D starts (wait 12).
//
// Waits 0, 9, 0, 12, 0: mean 4.2, p95 12; C and E backfilled. Without the reservation
// D would start at 3 and push B to 15; without backfill C and E would wait.
func TestQueueWaitsByHand(t *testing.T) {
	nodes := []placement.Node{{Name: "n", CPU: 6, Mem: 10, Devices: []placement.Device{{Model: "X", Capacity: 1000, Shareable: true}}}}
	job := func(name string, submit, dur, mem int64, gpus int) Job {
		p := trace.Pod{Name: name, CPUMilli: 1, MemMiB: mem, NumGPU: gpus}
		if gpus > 0 {
			p.GPUMilli = 1000
		}
		return Job{Pod: p, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("A", 0, 10, 1, 1), job("B", 1, 5, 5, 1), job("C", 2, 20, 4, 0), job("D", 3, 100, 4, 0), job("E", 4, 3, 4, 0), job("F", 5, 1, 1, 2)}
	for _, name := range Policies {
		p, err := placement.ByName(name, 1, placement.Shape{CPU: 1, GPUs: 1, Units: 1000, Freq: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReplayQueue(nodes, jobs, p, 1, 6)
		if err != nil {
			t.Fatal(err)
		}
		if r.Started != 5 || r.NeverStarted != 1 || r.Backfilled != 2 || r.MeanWait != 4.2 || r.P95 != 12 {
			t.Errorf("%s: started %d, never %d, backfilled %d, mean wait %g, p95 %g; want 5, 1, 2, 4.2, 12", name, r.Started, r.NeverStarted, r.Backfilled, r.MeanWait, r.P95)
		}
		// A holds the only GPU from 0 to 10, the whole submission span (0 to 5).
		if r.MeanAlloc != 100 || !reflect.DeepEqual(r.Curve, []float64{100, 100, 100, 100, 100, 100}) {
			t.Errorf("%s: allocation %g%%, curve %v; want 100 throughout", name, r.MeanAlloc, r.Curve)
		}
	}
	// Backfill plans by a job's time limit, not its run time, as Slurm does: E, with a
	// limit of 20, would end at 24, past B's start, and cannot fit beside B and C then
	// (5+4+4): it waits until C ends at 22.
	limited := slices.Clone(jobs)
	limited[4].Limit = 20
	p, _ := placement.ByName("first-fit", 1)
	r, err := ReplayQueue(nodes, limited, p, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.JobWaits[4] != 18 || r.Backfilled != 1 {
		t.Errorf("E limited to 20: waited %g, %d backfilled; want 18 and 1 (C only)", r.JobWaits[4], r.Backfilled)
	}
	// Twice the load halves the submission times: A at 0, B at 0 (after A), ... and
	// every job still gets placed or refused, never lost.
	r, err = ReplayQueue(nodes, jobs, p, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Started+r.NeverStarted != len(jobs) {
		t.Fatalf("load 2: %d started and %d never of %d jobs", r.Started, r.NeverStarted, len(jobs))
	}
}

// TestQueueReservationSeesThisPassStarts: the head's reservation counts the jobs started
// earlier in the same pass. Two one-GPU nodes, models A and B:
//
//	t0  X (A, 600, runs 10) and W (B, 900, runs 100) start.
//	t1  Y (any, 600, runs 100) fits neither: the head.
//	t2  H (A, 600, runs 10) queues behind Y.
//	t10 X ends and Z (B, 100, runs 1) comes. Y starts on A (400 left); H is the head,
//	    which fits once Y ends at 110; Z backfills on B, as it ends at 11.
//
// H starts at 110 (wait 108). A reservation that missed Y (started in this pass) found
// A full for ever and failed the replay.
func TestQueueReservationSeesThisPassStarts(t *testing.T) {
	nodes := []placement.Node{
		{Name: "a", Devices: []placement.Device{{Model: "A", Capacity: 1000, Shareable: true}}},
		{Name: "b", Devices: []placement.Device{{Model: "B", Capacity: 1000, Shareable: true}}},
	}
	job := func(name string, submit, dur, milli int64, model string) Job {
		p := trace.Pod{Name: name, NumGPU: 1, GPUMilli: milli}
		if model != "" {
			p.Models = []string{model}
		}
		return Job{Pod: p, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("X", 0, 10, 600, "A"), job("W", 0, 100, 900, "B"), job("Y", 1, 100, 600, ""), job("H", 2, 10, 600, "A"), job("Z", 10, 1, 100, "B")}
	r, err := ReplayQueue(nodes, jobs, placement.FirstFit{}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 0, 9, 108, 0}; !reflect.DeepEqual(r.JobWaits, want) {
		t.Errorf("waits %v; want %v", r.JobWaits, want)
	}
}

// TestQueueReplayOnTrace: the trace's own times replay to the end with every policy,
// deterministically per seed, and no job is lost.
func TestQueueReplayOnTrace(t *testing.T) {
	dir, _, nodes := testTrace(t)
	jobs, err := LoadJobs(filepath.Join(dir, trace.WorkloadFile("default")))
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() && len(jobs) > 1000 {
		jobs = jobs[:1000]
	}
	pods := make([]trace.Pod, len(jobs))
	for i := range jobs {
		pods[i] = jobs[i].Pod
	}
	target := NewTarget(pods, 0.95)
	pn := trace.PlacementNodes(nodes)
	for _, name := range []string{"random", "fgd", placement.OursName} {
		var runs []QueueResult
		for range 2 {
			p, err := NewPolicy(name, target, 7)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ReplayQueue(pn, jobs, p, 4, 50)
			if err != nil {
				t.Fatal(err)
			}
			r.Wall = 0
			runs = append(runs, r)
		}
		r := runs[0]
		if !reflect.DeepEqual(runs[0], runs[1]) {
			t.Errorf("%s: two runs of seed 7 differ", name)
		}
		if r.Started+r.NeverStarted != len(jobs) || r.MeanWait < 0 || r.P95 < r.MeanWait && r.P95 != 0 || len(r.Curve) != 50 {
			t.Errorf("%s: %+v", name, r)
		}
		t.Logf("%s: mean wait %.0fs, p95 %.0fs, backfilled %d, never %d, allocation %.1f%%", name, r.MeanWait, r.P95, r.Backfilled, r.NeverStarted, r.MeanAlloc)
	}
}

func TestLoadJobsNeedsTimes(t *testing.T) {
	pods := []trace.Pod{{Name: "a"}}
	_, err := readTimes("x.csv", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,0\n"), pods)
	if err == nil || !strings.Contains(err.Error(), "creation_time") {
		t.Fatalf("a list without times: %v, want an error naming creation_time", err)
	}
	jobs, err := readTimes("x.csv", strings.NewReader("name,creation_time,deletion_time,scheduled_time\na,10,50,30\n"), pods)
	if err != nil || jobs[0].Submit != 10 || jobs[0].Duration != 20 {
		t.Fatalf("got %+v, %v; want submitted at 10, running 20 (deleted 50, scheduled 30)", jobs, err)
	}
	jobs, err = readTimes("x.csv", strings.NewReader("name,creation_time,deletion_time,scheduled_time\na,10,50,\n"), pods)
	if err != nil || jobs[0].Duration != 40 {
		t.Fatalf("never scheduled: got %+v, %v; want running 40 (deleted 50, created 10)", jobs, err)
	}
}
