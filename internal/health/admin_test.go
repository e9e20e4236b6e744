package health

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/usage"
)

var lostGPU1 = usage.Snapshot{GPUs: []usage.GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b", Err: errors.New("GPU is lost")}}}

// TestAdminDrainIsKept: an admin drained the node; one NVML error later the reason is
// still theirs, and when the problem clears the node stays drained.
func TestAdminDrainIsKept(t *testing.T) {
	r := &recorder{state: "IDLE+DRAIN", reason: "disk replacement"}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true}
	now := time.Unix(0, 0)
	st, err := m.Observe(usage.Snapshot{}, errors.New("device count: Unknown Error"), now)
	if err != nil || st.Drained || !strings.Contains(st.Held, "disk replacement") || len(r.calls) != 0 || r.reason != "disk replacement" {
		t.Fatalf("NVML error on an admin-drained node: status %+v calls %q reason %q; want no call and the admin's reason kept", st, r.calls, r.reason)
	}
	for i := 0; i < 5; i++ {
		m.Observe(twoGPUs(), nil, now)
	}
	if len(r.calls) != 0 || r.state != "IDLE+DRAIN" {
		t.Fatalf("healthy again: calls %q state %s; want the admin's drain left alone", r.calls, r.state)
	}
}

// TestOtherStatesAreNotOurs: a down, rebooting or maintenance node is not drained.
func TestOtherStatesAreNotOurs(t *testing.T) {
	for _, state := range []string{"DOWN*", "IDLE+REBOOT_REQUESTED", "IDLE+MAINT", "IDLE+POWERED_DOWN", "FUTURE"} {
		r := &recorder{state: state, reason: "x"}
		m := &Monitor{Node: "n1", Drainer: r, Drain: true}
		if st, _ := m.Observe(lostGPU1, nil, time.Unix(0, 0)); len(r.calls) != 0 || st.Held == "" {
			t.Errorf("state %s: calls %q status %+v; want nothing done and the reason it held back", state, r.calls, st)
		}
	}
}

// TestAdminRedrainIsNotResumed: gpumemd drained, then the admin drained again with a
// reason of their own; the GPU comes back and the node stays drained.
func TestAdminRedrainIsNotResumed(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	if st, _ := m.Observe(lostGPU1, nil, now); !st.Drained {
		t.Fatalf("lost GPU: %+v %q", st, r.calls)
	}
	r.reason = "RMA GPU 1" // scontrol update nodename=n1 state=drain reason="RMA GPU 1"
	for i := 0; i < 5; i++ {
		m.Observe(twoGPUs(), nil, now)
	}
	if strings.Contains(strings.Join(r.calls, "|"), "resume") || r.reason != "RMA GPU 1" {
		t.Fatalf("calls %q reason %q; want no resume of the admin's drain", r.calls, r.reason)
	}
}

// TestDebounce: alternating bad and good polls never drain; N bad in a row drain once,
// N good in a row resume once.
func TestDebounce(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, DrainAfter: 3, ResumeAfter: 3}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	for i := 0; i < 10; i++ {
		if i%2 == 0 {
			m.Observe(lostGPU1, nil, now)
		} else {
			m.Observe(twoGPUs(), nil, now)
		}
	}
	if len(r.calls) != 0 {
		t.Fatalf("alternating polls: calls %q; want none", r.calls)
	}
	for i := 0; i < 3; i++ {
		m.Observe(lostGPU1, nil, now)
	}
	for i := 0; i < 2; i++ {
		if st, _ := m.Observe(twoGPUs(), nil, now); !st.Drained {
			t.Fatalf("resumed after %d good polls of 3", i+1)
		}
	}
	m.Observe(twoGPUs(), nil, now)
	if got := strings.Join(r.calls, "|"); got != "drain n1 gpumem: health: GPU 1 lost: GPU is lost|resume n1" {
		t.Fatalf("calls %q; want one drain after 3 bad polls and one resume after 3 good", got)
	}
}

// TestRestartKeepsXIDAndLostGPU: a node drained for XID 79 is not resumed by the next
// gpumemd; a GPU that vanished while gpumemd was down is still missed; the file is
// private.
func TestRestartKeepsXIDAndLostGPU(t *testing.T) {
	state := filepath.Join(t.TempDir(), "health.json")
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, State: state}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	m.XID(1, 79, now)
	if st, _ := m.Observe(twoGPUs(), nil, now); !st.Drained {
		t.Fatalf("XID 79: %+v", st)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v; want mode 0600", fi, err)
	}
	// Restart: a new monitor, the same file.
	m = &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, State: state}
	for i := 0; i < 5; i++ {
		if st, _ := m.Observe(twoGPUs(), nil, now.Add(time.Hour)); st.Healthy || !st.Drained {
			t.Fatalf("after restart: %+v; want XID 79 still held and the node drained", st)
		}
	}
	if strings.Contains(strings.Join(r.calls, "|"), "resume") {
		t.Fatalf("restart resumed a node drained for XID 79: %q", r.calls)
	}
	// The admin resumes the node (the GPU was reset): the XID is cleared for good.
	r.state, r.reason = "IDLE", ""
	m.Observe(twoGPUs(), nil, now.Add(2*time.Hour))
	if st, _ := m.Observe(twoGPUs(), nil, now.Add(2*time.Hour)); !st.Healthy || st.Drained {
		t.Fatalf("after the admin's resume: %+v; want healthy, not drained", st)
	}
	// GPU 1 disappears while gpumemd is down; the next one still knows it was there.
	m = &Monitor{Node: "n1", Drainer: r, Drain: true, State: state}
	one := usage.Snapshot{GPUs: []usage.GPU{{Index: 0, UUID: "GPU-a"}}}
	if st, _ := m.Observe(one, nil, now); st.Healthy || !strings.Contains(strings.Join(st.Problems, ""), "GPU-b") {
		t.Fatalf("GPU lost across a restart: %+v", st)
	}
	// A file of another version is set aside, not misread.
	os.WriteFile(state, []byte(`{"version": 99, "drained": "gpumem: x"}`), 0o600)
	m = &Monitor{Node: "n1", Drainer: &recorder{}, State: state}
	if st, _ := m.Observe(twoGPUs(), nil, now); st.Drained {
		t.Fatalf("version 99 read as drained: %+v", st)
	}
}

// TestMIGApplyDrainIsNotAdopted: while a MIG layout change holds the node drained, GPUs
// come and go; the monitor neither takes that drain as its own nor resumes the node.
func TestMIGApplyDrainIsNotAdopted(t *testing.T) {
	r := &recorder{state: "IDLE+DRAIN", reason: drainreason.MIG + " (gpu 0)"}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, DrainAfter: 1, ResumeAfter: 1}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	if st, _ := m.Observe(lostGPU1, nil, now); st.Drained {
		t.Fatalf("lost GPU during a MIG change: %+v; want the apply's drain not adopted", st)
	}
	for i := 0; i < 5; i++ {
		m.Observe(twoGPUs(), nil, now)
	}
	if len(r.calls) != 0 || r.state != "IDLE+DRAIN" || !strings.HasPrefix(r.reason, drainreason.MIG) {
		t.Fatalf("calls %q state %s reason %q; want the apply's drain left to the apply", r.calls, r.state, r.reason)
	}
}

// TestFenceDrainIsNeverResumed: a node drained because the driver fence failed for a job
// (this release's reason or the one before's) is an admin's to lift, or the fence's own
// next success: a GPU problem that comes and goes under it must not make the monitor
// take the drain as its own and resume the node once the GPU is back.
func TestFenceDrainIsNeverResumed(t *testing.T) {
	for _, reason := range []string{
		drainreason.ForFence("42", "cannot write the limit"),
		"gpumem: GPU memory fence failed for job 42",
	} {
		r := &recorder{state: "IDLE+DRAIN", reason: reason}
		m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true, ResumeAfter: 3}
		now := time.Unix(0, 0)
		m.Observe(twoGPUs(), nil, now)
		if st, _ := m.Observe(lostGPU1, nil, now); st.Drained || st.Held == "" {
			t.Errorf("%q: lost GPU on a fence-drained node: %+v; want the drain not adopted, and held back", reason, st)
		}
		for i := 0; i < 5; i++ {
			m.Observe(twoGPUs(), nil, now)
		}
		if len(r.calls) != 0 || r.state != "IDLE+DRAIN" || r.reason != reason {
			t.Errorf("%q: calls %q state %s reason %q; want the fence's drain left alone", reason, r.calls, r.state, r.reason)
		}
	}
}

// TestFenceDrainAfterAnAdminResumeIsNotResumed: the monitor drained the node; an admin
// resumed it and, before the monitor looked again, a fence failed and drained it. The
// monitor's drain is over, and the fence's is not its to lift.
func TestFenceDrainAfterAnAdminResumeIsNotResumed(t *testing.T) {
	r := &recorder{}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true}
	now := time.Unix(0, 0)
	m.Observe(twoGPUs(), nil, now)
	if st, _ := m.Observe(lostGPU1, nil, now); !st.Drained || !drainreason.IsHealth(r.reason) {
		t.Fatalf("lost GPU: %+v, reason %q; want drained with a health reason", st, r.reason)
	}
	r.state, r.reason = "IDLE+DRAIN", "gpumem: GPU memory fence failed for job 7"
	for i := 0; i < 3; i++ {
		m.Observe(twoGPUs(), nil, now)
	}
	if strings.Contains(strings.Join(r.calls, "|"), "resume") || r.state != "IDLE+DRAIN" {
		t.Fatalf("calls %q state %s; want the fence's drain left alone", r.calls, r.state)
	}
}

// TestOldReleaseHealthDrainIsAdopted: a node the previous release's monitor drained (its
// reason had no "health: ") is still the monitor's after an upgrade that lost the state
// file: it is adopted while the problem lasts and resumed once it is gone.
func TestOldReleaseHealthDrainIsAdopted(t *testing.T) {
	r := &recorder{state: "IDLE+DRAIN", reason: "gpumem: GPU 1 lost: GPU is lost"}
	m := &Monitor{Node: "n1", Drainer: r, Drain: true, Resume: true}
	now := time.Unix(0, 0)
	if st, _ := m.Observe(lostGPU1, nil, now); !st.Drained || len(r.calls) != 0 {
		t.Fatalf("old health drain: %+v calls %q; want it adopted as it is", st, r.calls)
	}
	m.Observe(twoGPUs(), nil, now)
	if got := strings.Join(r.calls, "|"); got != "resume n1" {
		t.Fatalf("calls %q; want the adopted drain resumed once the GPU is back", got)
	}
}
