package usage

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

const gib = 1 << 30

// child starts a real `sleep` with env (a job may set anything there), its stderr
// going to a file the test can read.
func child(t *testing.T, env ...string) (*running, string) {
	t.Helper()
	errPath := t.TempDir() + "/stderr"
	f, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return start(t, f, env...), errPath
}

// start starts `sleep 300` with stderr and env.
func start(t *testing.T, stderr *os.File, env ...string) *running {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{Process: cmd.Process, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-r.done })
	return r
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

// slurmFor is a fake Slurm running the children as jobs: over as 101 with 10 shards,
// under as 102 with 20, both the test's own user's.
func slurmFor(t *testing.T, over, under *running) (*slurmtest.Slurm, *Owners) {
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "101", UID: os.Getuid(), Node: "t1", Shards: 10, PIDs: []int{over.Pid}},
		slurmtest.Job{ID: "102", UID: os.Getuid(), Node: "t1", Shards: 20, PIDs: []int{under.Pid}})
	return s, &Owners{Node: "t1", Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
}

func confirmWith(o *Owners) func(string, []int) (map[int]bool, error) {
	return func(job string, pids []int) (map[int]bool, error) { return o.Confirm(context.Background(), job, pids) }
}

func TestKillPolicyKillsOnlyTheOverJobAfterGrace(t *testing.T) {
	over, _ := child(t, "SLURM_JOB_ID=101", "SLURM_SHARDS_ON_NODE=80")
	under, _ := child(t, "SLURM_JOB_ID=102", "SLURM_SHARDS_ON_NODE=1")
	s, o := slurmFor(t, over, under)
	e := &Enforcer{UsagePolicy: PolicyKill, Grace: 30 * time.Second, Confirm: confirmWith(o)}
	t0 := time.Unix(1_700_000_000, 0)

	owner, poll := o.Owners(context.Background(), node(over, under), t0)
	jobs, _ := Account(node(over, under), owner, gib)
	if poll.Err != nil || len(jobs) != 2 || jobs[0].Alloc != 10*gib || jobs[1].Alloc != 20*gib {
		t.Fatalf("jobs %+v, %v; want 101 with Slurm's 10 shards and 102 with 20, whatever their environment says", jobs, poll.Err)
	}
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
	if c := s.Calls(); !strings.Contains(c, "listpids 101 t1") {
		t.Errorf("the kill was not confirmed with Slurm first:\n%s", c)
	}
}

// TestWarnGoesThroughSlurmNotStderr: the warning reaches the job through scontrol
// notify; gpumemd opens nothing of the job's, so a job whose stderr is a read-only
// root file or a FIFO nobody reads neither gets root to write that file nor blocks
// the poll.
func TestWarnGoesThroughSlurmNotStderr(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=x\n"), 0o644)
	ro, err := os.Open(conf) // read-only, as a user may hand any file they can read
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	over := start(t, ro)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR opens a FIFO without a reader; the child keeps only a writer's view of it.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	under := start(t, f)
	s, o := slurmFor(t, over, under)
	n := &Notifier{Scontrol: slurmcli.Runner{Path: s.Scontrol}}
	ctx, cancel := context.WithCancel(context.Background())
	done := n.Start(ctx)
	defer func() { cancel(); <-done }()
	e := &Enforcer{UsagePolicy: PolicyWarn, Grace: time.Second, Tell: n.Tell, Confirm: confirmWith(o)}
	snap := node(over, under)
	snap.GPUs[0].Procs[1].Used = 30 * gib // 102 over too: its stderr is the FIFO
	owner, _ := o.Owners(context.Background(), snap, time.Unix(0, 0))
	jobs, _ := Account(snap, owner, gib)
	t0 := time.Now()
	var warnings int
	for i := 0; i < 5; i++ {
		for _, a := range e.Step(jobs, time.Unix(int64(i)*60, 0)) {
			if a.Kind != "warn" {
				t.Fatalf("warn policy did %+v", a)
			}
			warnings++
		}
	}
	if took := time.Since(t0); took > time.Second {
		t.Errorf("five polls with warnings took %s", took)
	}
	if warnings != 2 {
		t.Fatalf("%d warnings over five polls of one episode each for two jobs, want 2", warnings)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.Calls(), "notify 102 gpumem: job 102 uses 30.0 GiB") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	c := s.Calls()
	if !strings.Contains(c, "notify 101 gpumem: job 101 uses 14.0 GiB of GPU memory but was allocated 10.0 GiB") || !strings.Contains(c, "notify 102 ") {
		t.Errorf("scontrol calls:\n%s\nwant one notify per job over its slice", c)
	}
	if b, _ := os.ReadFile(conf); string(b) != "ClusterName=x\n" {
		t.Errorf("the read-only file a job's stderr pointed at was written: %q", b)
	}
	if done, _ := exited(over, 100*time.Millisecond); done {
		t.Fatal("warn policy killed job 101")
	}
}

// TestNotifyNeverBlocksThePoll: a hanging scontrol notify holds only the notifier's
// goroutine; Tell returns at once, and what does not fit its queue is dropped.
func TestNotifyNeverBlocksThePoll(t *testing.T) {
	s := slurmtest.New(t, false)
	s.Hang(true)
	n := &Notifier{Scontrol: slurmcli.Runner{Path: s.Scontrol, Timeout: 100 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	done := n.Start(ctx)
	t0 := time.Now()
	for i := 0; i < 3*notifyQueue; i++ {
		n.Tell("7", "m")
	}
	if took := time.Since(t0); took > 100*time.Millisecond {
		t.Errorf("%d Tells took %s", 3*notifyQueue, took)
	}
	if n.Dropped.Load() == 0 {
		t.Error("a full queue dropped nothing")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the notifier did not stop with its context")
	}
}

// TestKillSkipsReusedPID: the poll saw the PID in job 301; by the time of the kill
// Slurm lists it in job 999 (the PID was reused), so nothing is signalled.
func TestKillSkipsReusedPID(t *testing.T) {
	other, _ := child(t)
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "301", UID: os.Getuid(), Node: "t1", Shards: 1, PIDs: []int{other.Pid}})
	o := &Owners{Node: "t1", Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
	snap := Snapshot{GPUs: []GPU{{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: other.Pid, Used: 2 * gib, GI: NoInstance}}}}}
	owner, _ := o.Owners(context.Background(), snap, time.Unix(0, 0))
	jobs, _ := Account(snap, owner, gib)
	s.SetJobs(slurmtest.Job{ID: "999", UID: os.Getuid(), Node: "t1", Shards: 1, PIDs: []int{other.Pid}})
	e := &Enforcer{UsagePolicy: PolicyKill, Confirm: confirmWith(o)}
	for _, a := range e.Step(jobs, time.Unix(0, 0)) {
		if a.Kind == "kill" {
			t.Fatalf("reported %+v though no process was still the job's", a)
		}
	}
	if done, _ := exited(other, 200*time.Millisecond); done {
		t.Fatal("a PID that no longer belongs to the job was killed")
	}
}

// TestSignalGoesToTheProcessCheckedNotThePID: the pidfd is opened before the check, so
// a process that ends between the check and the signal is never replaced by whatever
// takes its PID: the signal fails with ESRCH on the pidfd instead.
func TestSignalGoesToTheProcessCheckedNotThePID(t *testing.T) {
	victim, _ := child(t)
	confirm := func(string, []int) (map[int]bool, error) {
		// Between the pidfd and the signal, the process ends.
		victim.Kill()
		<-victim.done
		return map[int]bool{victim.Pid: true}, nil
	}
	killed, failed := signalConfirmed("1", []int{victim.Pid}, confirm, syscall.SIGKILL)
	if len(killed) != 0 || len(failed) != 0 {
		t.Errorf("signalled %v, failed %v; want the ended process skipped (ESRCH through its pidfd)", killed, failed)
	}
}

func TestSpikeShorterThanGraceIsForgiven(t *testing.T) {
	var confirmed int
	e := &Enforcer{UsagePolicy: PolicyKill, Grace: time.Minute,
		Confirm: func(string, []int) (map[int]bool, error) { confirmed++; return nil, nil }}
	over := []Job{{ID: "7", Alloc: gib, Used: 2 * gib, GPUs: []JobGPU{{PIDs: []int{os.Getpid()}}}}}
	fine := []Job{{ID: "7", Alloc: gib, Used: gib / 2, GPUs: []JobGPU{{PIDs: []int{os.Getpid()}}}}}
	t0 := time.Unix(0, 0)
	e.Step(over, t0)
	e.Step(fine, t0.Add(50*time.Second))
	e.Step(over, t0.Add(70*time.Second))
	if confirmed != 0 {
		t.Fatal("a job back under its slice kept its old grace clock and was acted on")
	}
	e.Step(over, t0.Add(130*time.Second))
	if confirmed != 1 {
		t.Fatalf("kill attempted %d times after a full minute over, want 1", confirmed)
	}
}

// Under UsagePolicy = record a job over its slice is logged once per episode (an
// action of kind record), never told or signalled; back under and over again is a new
// episode.
func TestRecordLogsEachEpisodeOnce(t *testing.T) {
	told, confirmed := 0, 0
	e := &Enforcer{UsagePolicy: PolicyRecord, Grace: time.Second,
		Tell:    func(string, string) { told++ },
		Confirm: func(string, []int) (map[int]bool, error) { confirmed++; return nil, nil }}
	over := []Job{{ID: "7", Alloc: 20 * gib, Used: 22 * gib, GPUs: []JobGPU{{PIDs: []int{os.Getpid()}}}}}
	fine := []Job{{ID: "7", Alloc: 20 * gib, Used: gib, GPUs: []JobGPU{{PIDs: []int{os.Getpid()}}}}}
	t0 := time.Unix(0, 0)
	var kinds []string
	for i, jobs := range [][]Job{over, over, over, fine, over} {
		for _, a := range e.Step(jobs, t0.Add(time.Duration(i)*time.Hour)) {
			kinds = append(kinds, a.Kind)
			if !strings.Contains(a.Detail, "job 7 uses 22.0 GiB of GPU memory but was allocated 20.0 GiB") || !strings.Contains(a.Detail, "UsagePolicy = record") {
				t.Errorf("record line %q", a.Detail)
			}
		}
	}
	if strings.Join(kinds, ",") != "record,record" || told != 0 || confirmed != 0 {
		t.Errorf("actions %v, told %d, kill checks %d; want one record per episode and nothing done", kinds, told, confirmed)
	}
}
