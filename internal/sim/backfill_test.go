package sim

import (
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// TestBackfillReservesForEveryJob: Slurm's backfill holds a reservation for every
// queued job it looks at, the simulator's own for the head only. Two GPUs of 10
// shards, a and b, first fit:
//
//	t0  A (10, runs 10) on a; X (6, runs 15) on b.
//	t1  B (10, runs 10) fits nowhere: the head, reserved on a at 10.
//	t2  D (6, runs 10) fits nowhere now; Slurm reserves it on b at 15, when X ends.
//	t3  C (4, runs 50) fits b now, beside X. The simulator starts it (it does not
//	    delay B). Slurm does not: over its run b would hold X, then D's reservation.
//	t10 A ends, B starts. t15 X ends: D starts on b, then C beside it.
//
// Slurm's way: waits 0, 0, 9, 13, 12. The simulator's: C waits 0, D 13 all the same.
func TestBackfillReservesForEveryJob(t *testing.T) {
	nodes := []placement.Node{
		{Name: "a", Devices: []placement.Device{{Capacity: 10, Shareable: true}}},
		{Name: "b", Devices: []placement.Device{{Capacity: 10, Shareable: true}}},
	}
	job := func(name string, submit, dur, shards int64) Job {
		return Job{Pod: trace.Pod{Name: name, NumGPU: 1, GPUMilli: shards}, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("A", 0, 10, 10), job("X", 0, 15, 6), job("B", 1, 10, 10), job("D", 2, 10, 6), job("C", 3, 50, 4)}
	for _, tc := range []struct {
		name  string
		o     replayOpts
		waits []float64
	}{
		{"the simulator's", replayOpts{}, []float64{0, 0, 9, 13, 0}},
		{"Slurm's", replayOpts{backfillEvery: 1}, []float64{0, 0, 9, 13, 12}},
	} {
		r, err := replayQueue(nodes, jobs, placement.FirstFit{}, tc.o, 1, 2)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(r.JobWaits, tc.waits) {
			t.Errorf("%s backfill: waits %v; want %v", tc.name, r.JobWaits, tc.waits)
		}
	}
}
