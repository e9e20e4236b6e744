package history

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/jobsummary"
	"github.com/gpumem/gpumem/internal/usage"
)

// TestSummaryOfAnEndedJob: a job on two GPUs, over its slice on one for two polls,
// warned once: its summary carries each GPU's slice, peak and mean, the time over, the
// warning, and its memory over time; it is due only once settled, and not again once
// written; a failed try waits longer each time.
func TestSummaryOfAnEndedJob(t *testing.T) {
	s := open(t, Options{Bucket: 10 * time.Second})
	t0 := time.Unix(1_700_000_000, 0)
	poll := func(i int, used0, used1 uint64) {
		j := usage.Job{ID: "9", Kind: usage.KindShard, Alloc: 8 * gib, Used: used0 + used1, GPUs: []usage.JobGPU{
			{GPU: 0, Used: used0, Alloc: 4 * gib}, {GPU: 2, Used: used1, Alloc: 4 * gib}}}
		if err := s.Record(t0.Add(time.Duration(i)*10*time.Second), []usage.Job{j}); err != nil {
			t.Fatal(err)
		}
	}
	poll(0, 1*gib, 2*gib)
	poll(1, 1*gib, 6*gib) // 7 of its 8 GiB on the node: within (the node's sum decides)
	poll(2, 6*gib, 6*gib) // over
	if err := s.Acted([]usage.Action{{Job: "9", Kind: "warn"}, {Job: "9", Kind: "record"}, {Job: "1", Kind: "kill"}}); err != nil {
		t.Fatal(err)
	}
	poll(3, 6*gib, 4*gib) // over
	poll(4, 1*gib, 1*gib)
	end := t0.Add(50 * time.Second)
	if err := s.Record(end, nil); err != nil {
		t.Fatal(err)
	}
	// Settling counts from the last poll that saw the job (t0+40s).
	if due, _ := s.Due(t0.Add(44*time.Second), 5*time.Second, 10); len(due) != 0 {
		t.Errorf("due before it settled: %v", due)
	}
	due, err := s.Due(end.Add(10*time.Second), 5*time.Second, 10)
	if err != nil || len(due) != 1 || due[0] != "9" {
		t.Fatalf("due %v %v; want job 9", due, err)
	}
	got, err := s.Summary("9", "n3")
	if err != nil {
		t.Fatal(err)
	}
	want := jobsummary.Summary{Version: 1, Node: "n3", Kind: "shard", Seconds: 40, OverSeconds: 20, Warnings: 1,
		GPUs: []jobsummary.GPU{
			{Index: 0, SliceMiB: 4096, PeakMiB: 6144, MeanMiB: 15 * 1024 / 5},
			{Index: 2, SliceMiB: 4096, PeakMiB: 6144, MeanMiB: 19 * 1024 / 5}},
		Series: []int64{3072, 7 * 1024, 12 * 1024, 10 * 1024, 2048}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary\n got %+v\nwant %+v", got, want)
	}
	if _, err := jobsummary.Encode(got); err != nil {
		t.Errorf("the summary does not encode: %v", err)
	}

	later := end.Add(10 * time.Second)
	for i, wait := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute} {
		tries, err := s.Retry("9", later)
		if err != nil || tries != i+1 {
			t.Fatalf("retry %d: %d %v", i+1, tries, err)
		}
		if due, _ := s.Due(later.Add(wait-time.Second), 0, 10); len(due) != 0 {
			t.Errorf("try %d: due again before %s", tries, wait)
		}
		if due, _ := s.Due(later.Add(wait), 0, 10); len(due) != 1 {
			t.Errorf("try %d: not due after %s", tries, wait)
		}
	}
	if err := s.Written("9"); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.Due(later.Add(time.Hour), 0, 10); len(due) != 0 {
		t.Errorf("due after written: %v", due)
	}
	// Requeued and run again: a new summary is due when it ends again.
	poll(100, gib, gib)
	if err := s.Record(t0.Add(1010*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.Due(t0.Add(2000*time.Second), 0, 10); len(due) != 1 {
		t.Errorf("a job that ran again is not due: %v", due)
	}
}
