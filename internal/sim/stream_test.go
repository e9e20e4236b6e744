package sim

import (
	"math"
	"reflect"
	"testing"

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
