package migapply

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
)

// TestSecondApplyRefusedWhileOneRuns starts a second apply (and a bare recovery) while
// the first waits for the node's job: both are refused with the first one named, and the
// first's journal, drain and change go on untouched.
func TestSecondApplyRefusedWhileOneRuns(t *testing.T) {
	r := newRig(t, "")
	r.slurm.SetNode("MIXED", "")
	first := r.applier(nil)
	var second, recovery error
	var journalThen []byte
	var drainedThen bool
	first.Sleep = func(d time.Duration) {
		r.clock = r.clock.Add(d)
		if second != nil {
			return
		}
		other := r.applier(nil)
		second = other.Apply(want(map[int]string{0: "7g.40gb@0", 1: "3g.20gb@0,3g.20gb@4"}))
		recovery = r.applier(nil).Recover()
		journalThen, _ = os.ReadFile(r.journal)
		drainedThen = r.node().Flag("DRAIN")
		r.slurm.SetNode("IDLE", drainreason.MIG) // the job ends; the drain stays the apply's
	}
	if err := first.Apply(want(after)); err != nil {
		t.Fatalf("the first apply: %v\n%s", err, r.log.String())
	}
	for what, err := range map[string]error{"second apply": second, "recovery": recovery} {
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "apply "+first.owner.ID) {
			t.Errorf("%s while one runs: %v; want it refused naming the running apply %s", what, err, first.owner.ID)
		}
	}
	var j journal
	if err := json.Unmarshal(journalThen, &j); err != nil || j.Step != stepDrained || j.Owner == nil || j.Owner.ID != first.owner.ID || !drainedThen {
		t.Errorf("while the first apply waited, the second changed its journal (%s, owner %+v, %v) or the drain (%v)", j.Step, j.Owner, err, drainedThen)
	}
	r.has(after, "the first apply, left to finish")
	if n := r.node(); n.Flag("DRAIN") || first.Pending() {
		t.Errorf("after the first apply the node is %s (%q), journal %v", n.State, n.Reason, first.Pending())
	}
}

// TestJournalOfLiveOwnerNotTaken: a journal whose owner still runs (it failed and will
// retry) is not recovered by another process; once that owner is gone it is, and so is
// a version 1 journal, which names no owner.
func TestJournalOfLiveOwnerNotTaken(t *testing.T) {
	r := newRig(t, "")
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	o := Owner{ID: "0123456789ab", PID: owner.Process.Pid, Start: procStart(owner.Process.Pid), Cmd: "gpumemd", Since: r.clock}
	if o.Start == 0 {
		t.Fatal("no start time read for a running process")
	}
	r.slurm.SetNode("IDLE", drainreason.MIG)
	write := func(version int, o *Owner) {
		b, _ := json.Marshal(journal{Version: version, Node: "n1", Owner: o, Step: stepDrained, Drained: true,
			GPUs: []GPUChange{{Index: 0, From: before[0], To: after[0]}}})
		if err := os.WriteFile(r.journal, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(JournalVersion, &o)
	err := r.applier(nil).Recover()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(o.PID)+" (gpumemd)") {
		t.Fatalf("a journal of a live owner: %v", err)
	}
	if n := r.node(); !n.Flag("DRAIN") || !r.applier(nil).Pending() {
		t.Errorf("a journal of a live owner was taken: node %s, journal %v", n.State, r.applier(nil).Pending())
	}
	owner.Process.Kill()
	owner.Wait()
	for _, version := range []int{JournalVersion, 1} {
		if version == 1 {
			r.slurm.SetNode("IDLE", drainreason.MIG)
			write(1, nil)
		}
		if err := r.applier(nil).Recover(); err != nil {
			t.Fatalf("version %d journal of a dead owner: %v\n%s", version, err, r.log.String())
		}
		if n := r.node(); n.Flag("DRAIN") || r.applier(nil).Pending() {
			t.Errorf("version %d journal of a dead owner not rolled back: node %s, journal %v", version, n.State, r.applier(nil).Pending())
		}
	}
	r.has(before, "rolled back")
}

// TestLockReleasedByKill9: an apply in another process holds the lock and is refused
// to this one, naming that process; after a kill -9 of it, the kernel has released the
// lock and the apply here runs.
func TestLockReleasedByKill9(t *testing.T) {
	if os.Getenv("MIGAPPLY_HOLD_LOCK") != "" {
		a := &Applier{Node: "n1", Journal: os.Getenv("MIGAPPLY_HOLD_LOCK"), Cmd: "holder"}
		if _, err := a.lock(); err != nil {
			os.Exit(3)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	r := newRig(t, "")
	holder := exec.Command(os.Args[0], "-test.run=^TestLockReleasedByKill9$")
	holder.Env = append(os.Environ(), "MIGAPPLY_HOLD_LOCK="+r.journal)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	pid := "pid " + strconv.Itoa(holder.Process.Pid) + " (holder)"
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(r.journal + ".lock")
		var o Owner
		if json.Unmarshal(b, &o) == nil && o.PID == holder.Process.Pid {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the holder did not take the lock within 30s: %q", b)
		}
	}
	err := r.applier(nil).Apply(want(after))
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), pid) {
		t.Fatalf("an apply while another process holds the lock: %v", err)
	}
	r.has(before, "refused")
	if calls := r.slurm.Calls(); strings.Contains(calls, "update") {
		t.Errorf("a refused apply touched the node:\n%s", calls)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	if err := r.applier(nil).Apply(want(after)); err != nil {
		t.Fatalf("after kill -9 of the holder: %v\n%s", err, r.log.String())
	}
	r.has(after, "after the holder's kill -9")
}

// TestFailedApplyKeepsAdminDrain: an admin drains the node while the apply reloads
// Slurm, and the reload fails. The failure leaves the admin's reason in place, and the
// recovery that then finishes the apply does not resume the admin's node.
func TestFailedApplyKeepsAdminDrain(t *testing.T) {
	r := newRig(t, "")
	a := r.applier(nil)
	a.Reload = func(string) error {
		r.slurm.SetNode("IDLE", "admin: fan swap")
		return errors.New("slurmctld unreachable")
	}
	if err := a.Apply(want(after)); err == nil || !strings.Contains(err.Error(), "slurmctld unreachable") {
		t.Fatalf("a failed reload: %v", err)
	}
	if n := r.node(); !n.Flag("DRAIN") || n.Reason != "admin: fan swap" || !a.Pending() {
		t.Errorf("after the failure the node is %s (%q), journal %v; want the admin's drain kept and the journal", n.State, n.Reason, a.Pending())
	}
	if err := r.applier(nil).Recover(); err != nil {
		t.Fatalf("recovery: %v\n%s", err, r.log.String())
	}
	r.has(after, "recovered")
	if n := r.node(); !n.Flag("DRAIN") || n.Reason != "admin: fan swap" || a.Pending() {
		t.Errorf("after recovery the node is %s (%q), journal %v; want the admin's drain kept", n.State, n.Reason, a.Pending())
	}
}

// TestNoOpNeedsNoLock: an apply of the layout the GPUs already have answers "nothing to
// do" without taking the lock, so without a journal directory it can write.
func TestNoOpNeedsNoLock(t *testing.T) {
	r := newRig(t, "")
	a := r.applier(nil)
	a.Journal = filepath.Join(t.TempDir(), "missing", "mig-journal.json")
	if err := a.Apply(want(before)); err != nil || !strings.Contains(r.log.String(), "nothing to do") {
		t.Errorf("a no-op apply without a journal directory: %v\n%s", err, r.log.String())
	}
}
