package sim

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

func streamJobs() []Job {
	var js []Job
	for i, m := range []int64{100, 250, 500, 1000, 50} {
		js = append(js, Job{Pod: trace.Pod{Name: "t", NumGPU: 1, GPUMilli: m}, Duration: int64(300 * (i + 1))})
	}
	// Left out: no GPU, two GPUs, no run time.
	js = append(js, Job{Pod: trace.Pod{NumGPU: 0}, Duration: 60}, Job{Pod: trace.Pod{NumGPU: 2, GPUMilli: 1000}, Duration: 60},
		Job{Pod: trace.Pod{NumGPU: 1, GPUMilli: 300}})
	return js
}

func TestDrawStream(t *testing.T) {
	spec := StreamSpec{Jobs: 4000, Seed: 7, RefGiB: 24, TimeScale: 30, MinSec: 5, MaxSec: 40, Load: 1.5, Capacity: 500}
	a, err := DrawStream(streamJobs(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DrawStream(streamJobs(), spec)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same spec drew two streams")
	}
	sizes := map[int64]bool{}
	var shardSecs float64
	for i, j := range a {
		sizes[j.Shards] = true
		if j.Seconds < 5 || j.Seconds > 40 || (i > 0 && j.Offset < a[i-1].Offset) {
			t.Fatalf("job %d: %+v", i, j)
		}
		shardSecs += float64(j.Shards * j.Seconds)
	}
	// 100, 250, 500, 1000 and 50 milli of 24 GiB, rounded up; nothing from the tasks left out.
	if want := map[int64]bool{3: true, 6: true, 12: true, 24: true, 2: true}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("sizes %v; want %v", sizes, want)
	}
	// Offered load: shard-seconds over the arrival span and the capacity.
	offered := shardSecs / a[len(a)-1].Offset / float64(spec.Capacity)
	if math.Abs(offered-1.5) > 0.1 {
		t.Errorf("offered %.2f times the capacity; want 1.5", offered)
	}

	spec.Large, spec.LargeMinGiB, spec.LargeMaxGiB = 0.3, 30, 40
	c, _ := DrawStream(streamJobs(), spec)
	large := 0
	for _, j := range c {
		if j.Shards >= 30 {
			large++
		}
	}
	if f := float64(large) / float64(len(c)); math.Abs(f-0.3) > 0.03 {
		t.Errorf("%.2f of the jobs large; want 0.3", f)
	}
	for _, bad := range []StreamSpec{{}, {Jobs: 1, RefGiB: 1, TimeScale: 1, MinSec: 5, MaxSec: 4, Load: 1, Capacity: 1},
		{Jobs: 1, RefGiB: 1, TimeScale: 1, MinSec: 1, MaxSec: 4, Load: 1, Capacity: 1, Large: 0.5}} {
		if _, err := DrawStream(streamJobs(), bad); err == nil {
			t.Errorf("%+v: drawn", bad)
		}
	}
}

// A stream replayed on a lab: a job waits exactly as long as the GPUs say, and each
// job's wait is reported in seconds.
func TestReplayStream(t *testing.T) {
	gpus := []LabGPU{{"a", 24}, {"b", 24}}
	stream := []StreamJob{{0, 20, 10}, {0.5, 20, 10}, {1, 10, 5}, {1.25, 4, 3}}
	r, err := ReplayStream(gpus, stream, placement.FirstFit{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Jobs 0 and 1 take a GPU each; job 2 (10) waits for job 0's end at 10 s; job 3 (4)
	// fits beside job 0 at once.
	if want := []float64{0, 0, 9, 0}; !reflect.DeepEqual(r.JobWaits, want) {
		t.Errorf("waits %v; want %v", r.JobWaits, want)
	}
	if r.Started != 4 || r.MeanWait != 2.25 {
		t.Errorf("%d started, mean wait %v", r.Started, r.MeanWait)
	}
}

// lastFit takes the last node that fits: a policy unlike first fit, for the test below.
type lastFit struct{}

func (lastFit) Name() string { return "last-fit" }
func (lastFit) Place(s *placement.State, d *placement.Demand) (placement.Choice, bool) {
	for n := len(s.Nodes) - 1; n >= 0; n-- {
		if c, ok := s.FirstDevices(n, d); ok {
			return c, true
		}
	}
	return placement.Choice{}, false
}

// With a policy for the jobs that waited, each start is placed by the one its wait
// calls for, and that shows in a later job's wait.
func TestReplayStreamQueuedPolicy(t *testing.T) {
	// Jobs 0-2 fill c, b and a; job 3 (10) waits until 10 s, when a and b empty. Placed
	// by first fit it takes a, and job 4 (26) finds b whole at 11 s; placed by last fit
	// it takes b, and job 4 waits for job 3's end at 110 s.
	gpus := []LabGPU{{"a", 24}, {"b", 30}, {"c", 24}}
	stream := []StreamJob{{0, 20, 100}, {0, 26, 10}, {0, 24, 10}, {1, 10, 100}, {11, 26, 5}}
	for _, c := range []struct {
		queued placement.Policy
		want   []float64
	}{{nil, []float64{0, 0, 0, 9, 99}}, {placement.FirstFit{}, []float64{0, 0, 0, 9, 0}}} {
		r, err := ReplayStream(gpus, stream, lastFit{}, c.queued)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.JobWaits, c.want) {
			t.Errorf("queued %v: waits %v; want %v", c.queued, r.JobWaits, c.want)
		}
	}
}

// TestMeasureStream scores a hand-made run as the lab's is scored: a job that starts after
// the horizon is pending, a job still running at the horizon holds its shards up to it,
// and the warm-up is left out of the steady allocation only.
func TestMeasureStream(t *testing.T) {
	stream := []StreamJob{
		{Offset: 0, Shards: 10, Seconds: 4},  // starts at 0, ends at 4
		{Offset: 1, Shards: 40, Seconds: 20}, // large: starts at 3, held to the horizon (10)
		{Offset: 2, Shards: 10, Seconds: 5},  // starts at 9, held 1 s
		{Offset: 5, Shards: 10, Seconds: 1},  // starts at 11, after the horizon: pending
		{Offset: 5, Shards: 5, Seconds: 1},   // never started
	}
	waits := []float64{0, 2, 7, 6, -1}
	f, err := MeasureStream(stream, waits, 100, 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Window 0..10 on 100 shards: 10x4 + 40x7 + 10x1 = 330 shard-seconds of 1000.
	// From 4: 40x6 + 10x1 = 250 of 600.
	want := StreamFigures{Started: 3, Pending: 2, MeanWait: 3, P95: 7, SmallWait: 3.5, LargeWait: 2, Alloc: 33, AllocSteady: 250.0 / 6}
	if f != want {
		t.Errorf("MeasureStream = %+v\nwant %+v", f, want)
	}
	for _, bad := range []struct {
		name          string
		waits         []float64
		horizon, warm float64
	}{
		{"a wait missing", waits[:4], 5, 0},
		{"warm-up past the window", waits, 5, 10},
		{"negative horizon", waits, -1, 0},
	} {
		if _, err := MeasureStream(stream, bad.waits, 100, bad.horizon, bad.warm); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

// TestReplayStreamPinned walks the lab's pinning through a case small enough to follow
// by hand: the pins since the snapshot keep two jobs off one GPU, a snapshot taken
// before an unpinned job started sends a pin to a GPU that has just filled, and steer
// takes that pin back after UnpinAfter, so the job starts on the GPU that frees first.
func TestReplayStreamPinned(t *testing.T) {
	gpus := []LabGPU{{Node: "n1", Shards: 10}, {Node: "n1", Shards: 10}}
	stream := []StreamJob{
		{Offset: 0, Shards: 10, Seconds: 20}, // X: pinned to g0 (the first snapshot, empty)
		{Offset: 0.1, Shards: 6, Seconds: 6}, // Y: g0 is X's pin since the snapshot: pinned to g1
		{Offset: 1, Shards: 10, Seconds: 20}, // H: fits nowhere in the view, left to Slurm; starts on g1 at 6.1
		{Offset: 7, Shards: 4, Seconds: 10},  // C: the 5 s snapshot shows g1 with 4 free: pinned there, full since 6.1
	}
	for _, tc := range []struct {
		unpin time.Duration
		waitC float64
		taken int
		why   string
	}{
		{5 * time.Second, 13, 1, "unpinned at the 15 s snapshot (8 s after submission), started on g0 when X ends at 20"},
		{0, 19.1, 0, "never unpinned: waits for g1, free when H ends at 26.1"},
	} {
		r, err := ReplayStreamPinned(gpus, stream, placement.FirstFit{}, PinModel{Interval: 5 * time.Second, UnpinAfter: tc.unpin})
		if err != nil {
			t.Fatal(err)
		}
		want := []float64{0, 0, 5.1, tc.waitC}
		for i, w := range r.JobWaits {
			if math.Abs(w-want[i]) > 1e-9 {
				t.Errorf("unpin after %s: job %d waited %g s; want %g (%s)", tc.unpin, i, w, want[i], tc.why)
			}
		}
		if r.Pinned != 3 || r.Unpinned != tc.taken {
			t.Errorf("unpin after %s: %d pins made and %d taken back; want 3 and %d", tc.unpin, r.Pinned, r.Unpinned, tc.taken)
		}
	}
	if _, err := ReplayStreamPinned(gpus, stream, placement.FirstFit{}, PinModel{}); err == nil {
		t.Error("a pin model without an interval was taken")
	}
}

// noPins is a pin policy that finds no GPU for any job, so that Slurm places them all.
type noPins struct{}

func (noPins) Name() string { return "none" }
func (noPins) Place(*placement.State, *placement.Demand) (placement.Choice, bool) {
	return placement.Choice{}, false
}

// With steer's ranking (PinModel.Rank), Slurm starts an unpinned job on the first node
// of the last ranking that takes it, as node weights make it do, not in node order.
func TestReplayStreamPinnedFollowsWeights(t *testing.T) {
	gpus := []LabGPU{{Node: "n1", Shards: 10}, {Node: "n2", Shards: 6}}
	stream := []StreamJob{
		{Offset: 0, Shards: 1, Seconds: 1},  // the first arrival: the first snapshot, the ranking at 1 s
		{Offset: 2, Shards: 6, Seconds: 10}, // A
		{Offset: 3, Shards: 10, Seconds: 5}, // B: only n1 can hold it
	}
	for _, tc := range []struct {
		rank  func(*placement.State, []placement.Demand) []int
		waitB float64
		why   string
	}{
		{nil, 9, "node order: A on n1, which B then waits for until A ends at 12"},
		{func(*placement.State, []placement.Demand) []int { return []int{1, 0} }, 0, "n2 ranked first: A fills it, B starts on n1"},
	} {
		m := PinModel{Interval: time.Second, UnpinAfter: 20 * time.Second, Rank: tc.rank}
		r, err := ReplayStreamPinned(gpus, stream, noPins{}, m)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.JobWaits[2]; math.Abs(w-tc.waitB) > 1e-9 || r.Pinned != 0 {
			t.Errorf("B waited %g s with %d pins; want %g s and none (%s)", w, r.Pinned, tc.waitB, tc.why)
		}
	}
}
