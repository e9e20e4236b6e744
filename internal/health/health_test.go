package health

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/usage"
)

// recorder is Slurm's side of one node: its state and reason, changed by the calls
// it records, and by the test acting as the admin.
type recorder struct {
	calls  []string
	fail   error
	state  string // base state and flags, IDLE when empty
	reason string
}

func (r *recorder) Drain(node, reason string) error {
	r.calls = append(r.calls, "drain "+node+" "+reason)
	if r.fail == nil {
		r.state, r.reason = "IDLE+DRAIN", reason
	}
	return r.fail
}

func (r *recorder) Resume(node string) error {
	r.calls = append(r.calls, "resume "+node)
	if r.fail == nil {
		r.state, r.reason = "IDLE", ""
	}
	return r.fail
}

func (r *recorder) Node(node string) (slurmcli.Node, error) {
	if r.fail != nil {
		return slurmcli.Node{}, r.fail
	}
	st := r.state
	if st == "" {
		st = "IDLE"
	}
	return slurmcli.Node{Name: node, State: st, Reason: r.reason}, nil
}

func twoGPUs() usage.Snapshot {
	return usage.Snapshot{GPUs: []usage.GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}}
}

func TestApplicationXIDsNeverDrain(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true}
	now := time.Unix(0, 0)
	for _, x := range []int{13, 31, 43, 45, 68} {
		m.XID(0, x, now)
	}
	st, err := m.Observe(twoGPUs(), nil, now)
	if err != nil || !st.Healthy || len(r.calls) != 0 {
		t.Fatalf("application XIDs: status %+v err %v calls %v; want healthy and no scontrol call", st, err, r.calls)
	}
	if m.XIDCounts[[2]int{0, 43}] != 1 {
		t.Fatalf("XID 43 not counted: %v", m.XIDCounts)
	}
}

func TestCriticalXIDDrainsOnceAndHoldsUntilCleared(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, XIDHold: time.Minute}
	t0 := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, t0)
	m.XID(1, 79, t0)
	st, _ := m.Observe(twoGPUs(), nil, t0.Add(time.Second))
	m.Observe(twoGPUs(), nil, t0.Add(2*time.Second))
	want := []string{"drain n1 gpumem: health: GPU 1 XID 79"}
	if st.Healthy || !st.Drained || strings.Join(r.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("XID 79: status %+v calls %q; want one drain %q", st, r.calls, want)
	}
	st, _ = m.Observe(twoGPUs(), nil, t0.Add(2*time.Minute))
	if !st.Healthy || st.Drained || r.calls[len(r.calls)-1] != "resume n1" {
		t.Fatalf("after the hold: status %+v calls %q; want healthy and resumed", st, r.calls)
	}
}

func TestLostGPUAndNVMLFailure(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n2", Drainer: r, Drain: true}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	one := usage.Snapshot{GPUs: []usage.GPU{{Index: 0, UUID: "GPU-a"}}}
	st, _ := m.Observe(one, nil, now)
	if st.Healthy || len(st.Problems) != 1 || !strings.Contains(st.Problems[0], "GPU 1 (GPU-b) lost") {
		t.Fatalf("GPU 1 gone: %+v", st)
	}
	st, _ = m.Observe(twoGPUs(), nil, now)
	if !st.Healthy || !st.Drained || len(r.calls) != 1 {
		t.Fatalf("resume off: status %+v calls %q; want healthy but still drained, one call", st, r.calls)
	}
	r2 := &recorder{}
	m2 := &Monitor{Node: "n3", Drainer: r2, Drain: true}
	st, _ = m2.Observe(usage.Snapshot{}, errors.New("device count: Unknown Error"), now)
	if st.Healthy || len(r2.calls) != 1 || !strings.HasPrefix(r2.calls[0], "drain n3 gpumem: health: NVML failed: device count") {
		t.Fatalf("NVML failure: %+v %q", st, r2.calls)
	}
}

func TestFailedDrainIsRetried(t *testing.T) {
	r := &recorder{fail: errors.New("slurmctld unreachable")}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true}
	lost := usage.Snapshot{GPUs: []usage.GPU{{Index: 0, Err: errors.New("GPU is lost")}}}
	if _, err := m.Observe(lost, nil, time.Unix(0, 0)); err == nil {
		t.Fatal("a failed scontrol call was not reported")
	}
	r.fail = nil
	st, err := m.Observe(lost, nil, time.Unix(1, 0))
	if err != nil || !st.Drained || len(r.calls) != 1 {
		t.Fatalf("retry: status %+v err %v calls %q; want the drain once slurmctld answers", st, err, r.calls)
	}
}

func TestScontrolArguments(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "args")
	script := filepath.Join(dir, "scontrol")
	os.WriteFile(script, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done >> "+log+"\n"), 0o755)
	s := slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: script}}
	if err := s.Drain("gpu-07", "gpumem: GPU 1 XID 79"); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume("gpu-07"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	want := "update\nnodename=gpu-07\nstate=drain\nreason=gpumem: GPU 1 XID 79\nupdate\nnodename=gpu-07\nstate=resume\n"
	if string(b) != want {
		t.Fatalf("scontrol got\n%s\nwant\n%s", b, want)
	}
	if err := (slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: filepath.Join(dir, "missing")}}).Resume("x"); err == nil {
		t.Fatal("a missing scontrol gave no error")
	}
}

func TestWatchXIDsFromFakeNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.json")
	os.WriteFile(path, []byte(`{"gpus":[{"model": "h100-80gb"},{"model": "h100-80gb"}]}`), 0o644)
	src, err := nvmlsrc.Open("fake:" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan XIDEvent, 4)
	if err := WatchXIDs(ctx, src.NVML, 20*time.Millisecond, out); err != nil {
		t.Fatal(err)
	}
	src.Fake.AddXID(1, nvmlsrc.FakeXID{XID: 79})
	select {
	case ev := <-out:
		if ev.GPU != 1 || ev.XID != 79 {
			t.Fatalf("event %+v, want GPU 1 XID 79", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no XID event within 5s")
	}
}

func TestScontrolReason(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "scontrol")
	os.WriteFile(script, []byte("#!/bin/sh\necho 'NodeName=n1 Arch=x86_64 State=IDLE+DRAIN Partitions=gpu Reason=gpumem: GPU 1 XID 79 [root@2026-11-30T15:44:41]'\n"), 0o755)
	r, err := slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: script}}.Reason("n1")
	if err != nil || r != "gpumem: GPU 1 XID 79" {
		t.Fatalf("Reason = %q, %v", r, err)
	}
	os.WriteFile(script, []byte("#!/bin/sh\necho 'NodeName=n1 State=IDLE Partitions=gpu'\n"), 0o755)
	if r, err := (slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: script}}).Reason("n1"); err != nil || r != "" {
		t.Fatalf("no reason: %q, %v", r, err)
	}
}

// TestXIDWatcherBacksOffOnErrors: a wait that fails at once with an error other than a
// timeout (the driver going away) is retried with a growing pause, not in a spin.
func TestXIDWatcherBacksOffOnErrors(t *testing.T) {
	srv := dgxh100.New()
	var waits atomic.Int64
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { waits.Add(1); return nvml.EventData{}, nvml.ERROR_UNKNOWN },
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	for _, d := range srv.Devices {
		d.(*server.Device).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := WatchXIDs(ctx, srv, 10*time.Millisecond, make(chan XIDEvent, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	// 10, 20, 40, 80, 160 ms ... : about 6 waits in half a second; a spin makes millions.
	if n := waits.Load(); n > 20 {
		t.Errorf("%d waits in 500ms on an erroring event set; want a backoff", n)
	}
}
