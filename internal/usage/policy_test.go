package usage

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const gib = 1 << 30

// child starts a real `sleep` that Slurm would have started for job id with shards
// shards, its stderr going to a file the test can read.
func child(t *testing.T, job string, shards string) (*running, string) {
	t.Helper()
	errPath := t.TempDir() + "/stderr"
	f, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{"SLURM_JOB_ID=" + job, "SLURM_SHARDS_ON_NODE=" + shards, "PATH=/usr/bin:/bin"}
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{Process: cmd.Process, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-r.done })
	return r, errPath
}

// running is a started child whose end can be awaited more than once.
type running struct {
	*os.Process
	done chan struct{}
	err  error
}

// exited reports whether the child ended within d, and by which signal.
func exited(r *running, d time.Duration) (bool, syscall.Signal) {
	select {
	case <-r.done:
		var ee *exec.ExitError
		if errors.As(r.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return true, ws.Signal()
			}
		}
		return true, 0
	case <-time.After(d):
		return false, 0
	}
}

// node is a fake NVML poll: job 101 (10 shards) holds 14 GiB, job 102 (20 shards)
// holds 12 GiB, both on GPU 0.
func node(over, under *running) Snapshot {
	return Snapshot{GPUs: []GPU{{Index: 0, Total: 80 * gib, Procs: []Proc{
		{PID: over.Pid, Used: 14 * gib, GI: NoInstance},
		{PID: under.Pid, Used: 12 * gib, GI: NoInstance},
	}}}}
}

func TestKillPolicyKillsOnlyTheOverJobAfterGrace(t *testing.T) {
	over, overErr := child(t, "101", "10")
	under, _ := child(t, "102", "20")
	procfs := Procfs{Root: "/proc"}
	e := &Enforcer{Policy: PolicyKill, Grace: 30 * time.Second, Notify: true, Owner: procfs.Owner, Proc: "/proc"}
	t0 := time.Unix(1_700_000_000, 0)

	jobs, _ := Account(node(over, under), procfs.Owner, gib)
	acts := e.Step(jobs, t0)
	if len(acts) != 1 || acts[0].Kind != "warn" || acts[0].Job != "101" {
		t.Fatalf("first poll over the slice: got %+v, want one warning for job 101", acts)
	}
	if acts := e.Step(jobs, t0.Add(29*time.Second)); len(acts) != 0 {
		t.Fatalf("inside the grace period: got %+v, want nothing", acts)
	}
	if done, _ := exited(over, 200*time.Millisecond); done {
		t.Fatal("job 101 died before its grace period ended")
	}
	acts = e.Step(jobs, t0.Add(30*time.Second))
	if len(acts) != 1 || acts[0].Kind != "kill" || len(acts[0].PIDs) != 1 || acts[0].PIDs[0] != over.Pid {
		t.Fatalf("grace over: got %+v, want job 101's PID %d killed", acts, over.Pid)
	}
	if done, sig := exited(over, 5*time.Second); !done || sig != syscall.SIGKILL {
		t.Fatalf("job 101: exited=%v signal=%v, want killed by SIGKILL", done, sig)
	}
	if done, _ := exited(under, 200*time.Millisecond); done {
		t.Fatal("job 102, within its slice, was killed")
	}
	b, _ := os.ReadFile(overErr)
	if !strings.Contains(string(b), "job 101 uses 14.0 GiB") || !strings.Contains(string(b), "will be killed in 30s") {
		t.Fatalf("job 101's stderr = %q, want the warning with its use and the grace", b)
	}
}

func TestWarnPolicyNeverKills(t *testing.T) {
	over, overErr := child(t, "201", "10")
	under, underErr := child(t, "202", "20")
	procfs := Procfs{Root: "/proc"}
	e := &Enforcer{Policy: PolicyWarn, Grace: time.Second, Notify: true, Owner: procfs.Owner, Proc: "/proc"}
	jobs, _ := Account(node(over, under), procfs.Owner, gib)
	t0 := time.Unix(1_700_000_000, 0)
	var warnings int
	for i := 0; i < 5; i++ {
		for _, a := range e.Step(jobs, t0.Add(time.Duration(i)*time.Minute)) {
			if a.Kind != "warn" {
				t.Fatalf("warn policy did %+v", a)
			}
			warnings++
		}
	}
	if warnings != 1 {
		t.Fatalf("%d warnings over five polls of one episode, want 1", warnings)
	}
	if done, _ := exited(over, 300*time.Millisecond); done {
		t.Fatal("warn policy killed job 201")
	}
	if b, _ := os.ReadFile(overErr); !strings.Contains(string(b), "job 201 uses 14.0 GiB of GPU memory but was allocated 10.0 GiB") {
		t.Fatalf("job 201's stderr = %q, want the warning", b)
	}
	if b, _ := os.ReadFile(underErr); len(b) != 0 {
		t.Fatalf("job 202, within its slice, was told %q", b)
	}
}

func TestKillSkipsReusedPID(t *testing.T) {
	other, _ := child(t, "999", "1")
	var signalled []int
	e := &Enforcer{Policy: PolicyKill, Owner: Procfs{Root: "/proc"}.Owner,
		Signal: func(pid int, _ syscall.Signal) error { signalled = append(signalled, pid); return nil }}
	// The poll said the PID was job 301's; by now it belongs to job 999.
	jobs := []Job{{ID: "301", Kind: KindShard, Alloc: gib, Used: 2 * gib, GPUs: []JobGPU{{GPU: 0, Used: 2 * gib, PIDs: []int{other.Pid}}}}}
	for _, a := range e.Step(jobs, time.Unix(0, 0)) {
		if a.Kind == "kill" {
			t.Fatalf("reported %+v though no process was still the job's", a)
		}
	}
	if len(signalled) != 0 {
		t.Fatalf("signalled %v, a PID that no longer belongs to the job", signalled)
	}
}

func TestSpikeShorterThanGraceIsForgiven(t *testing.T) {
	var signalled int
	e := &Enforcer{Policy: PolicyKill, Grace: time.Minute, Owner: func(int) (Owner, error) { return Owner{JobID: "7"}, nil },
		Signal: func(int, syscall.Signal) error { signalled++; return nil }}
	over := []Job{{ID: "7", Alloc: gib, Used: 2 * gib, GPUs: []JobGPU{{PIDs: []int{1}}}}}
	fine := []Job{{ID: "7", Alloc: gib, Used: gib / 2, GPUs: []JobGPU{{PIDs: []int{1}}}}}
	t0 := time.Unix(0, 0)
	e.Step(over, t0)
	e.Step(fine, t0.Add(50*time.Second))
	e.Step(over, t0.Add(70*time.Second))
	if signalled != 0 {
		t.Fatal("a job back under its slice kept its old grace clock and was killed")
	}
	e.Step(over, t0.Add(130*time.Second))
	if signalled != 1 {
		t.Fatalf("signalled %d times after a full minute over, want 1", signalled)
	}
}

func TestParsePolicy(t *testing.T) {
	if _, err := ParsePolicy("kil"); err == nil || !strings.Contains(err.Error(), "record, warn or kill") {
		t.Fatalf("ParsePolicy(kil) error = %v, want one naming the accepted policies", err)
	}
}
