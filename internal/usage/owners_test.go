package usage

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

func ownersOf(s *slurmtest.Slurm) *Owners {
	return &Owners{Node: "t1", Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
}

func onGPU0(procs ...*running) Snapshot {
	g := GPU{Index: 0, Total: 80 * gib}
	for _, p := range procs {
		g.Procs = append(g.Procs, Proc{PID: p.Pid, Used: 30 * gib, GI: NoInstance})
	}
	return Snapshot{GPUs: []GPU{g}}
}

// TestForgedEnvironmentOwnsNothing: job 42 runs one process. Processes outside any
// job claim to be job 42 with 80 shards, claim a shard count that is no number, or
// live in a cgroup path of the user's own making: none of it counts, because only
// Slurm's listpids says who is in a job.
func TestForgedEnvironmentOwnsNothing(t *testing.T) {
	innocent, _ := child(t)
	forger, _ := child(t, "SLURM_JOB_ID=42", "SLURM_SHARDS_ON_NODE=80", "SLURM_JOBID=42")
	liar, _ := child(t, "SLURM_JOB_ID=42", "SLURM_SHARDS_ON_NODE=lol")
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "42", UID: os.Getuid(), Node: "t1", Shards: 10, PIDs: []int{innocent.Pid}})
	o := ownersOf(s)
	snap := onGPU0(innocent, forger, liar)
	owner, poll := o.Owners(context.Background(), snap, time.Unix(0, 0))
	jobs, un := Account(snap, owner, gib)
	if poll.Err != nil || len(jobs) != 1 || jobs[0].ID != "42" || jobs[0].Used != 30*gib || jobs[0].Alloc != 10*gib {
		t.Fatalf("jobs %+v (%v); want job 42 with only its own process and Slurm's 10 shards", jobs, poll.Err)
	}
	if un[0] != 60*gib {
		t.Errorf("unattributed %v; want the forger's and the liar's 60 GiB", un)
	}
	// Kill policy: job 42 is over its 10 GiB; only its own process is signalled.
	e := &Enforcer{UsagePolicy: PolicyKill, Confirm: confirmWith(o)}
	e.Step(jobs, time.Unix(0, 0))
	if done, _ := exited(innocent, 5*time.Second); !done {
		t.Fatal("job 42's own process was not killed")
	}
	for _, p := range []*running{forger, liar} {
		if done, _ := exited(p, 100*time.Millisecond); done {
			t.Errorf("process %d outside any job was killed for job 42", p.Pid)
		}
	}
}

// TestOtherUsersProcessInAJobIsNotItsOwn: a process Slurm lists in a job but that runs
// as another user than the job's (a setuid helper) is not the job's to answer for.
func TestOtherUsersProcessInAJobIsNotItsOwn(t *testing.T) {
	p, _ := child(t)
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "43", UID: os.Getuid() + 1, Node: "t1", Shards: 10, PIDs: []int{p.Pid}})
	owner, _ := ownersOf(s).Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	if jobs, _ := Account(onGPU0(p), owner, gib); len(jobs) != 0 {
		t.Errorf("jobs %+v; want none: the process runs as uid %d, the job's user is %d", jobs, os.Getuid(), os.Getuid()+1)
	}
}

// TestUntrustedRecordFallsBackToSqueue: on a Slurm without --json, a job named
// "x JobState=COMPLETED" has a text record that cannot be read; its allocation comes
// from squeue, and it is enforced like any other job (not treated as ended).
func TestUntrustedRecordFallsBackToSqueue(t *testing.T) {
	p, _ := child(t)
	s := slurmtest.New(t, true)
	s.SetJobs(slurmtest.Job{ID: "44", UID: os.Getuid(), Name: "x JobState=COMPLETED Nodes=t1 CPU_IDs=0 Mem=0 GRES=shard:80(80/80)", Node: "t1", Shards: 10, PIDs: []int{p.Pid}})
	o := ownersOf(s)
	owner, poll := o.Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	jobs, _ := Account(onGPU0(p), owner, gib)
	if poll.Err != nil || len(jobs) != 1 || jobs[0].Kind != KindShard || jobs[0].Alloc != 10*gib || !jobs[0].Over() {
		t.Fatalf("jobs %+v (%v); want job 44 running with 10 shards and over", jobs, poll.Err)
	}
	if c := s.Calls(); !strings.Contains(c, "squeue -h -j 44 -o "+slurmcli.SummaryFormat) {
		t.Errorf("squeue not asked:\n%s", c)
	}
	// When squeue cannot say either, the allocation is unknown: measured, never acted on.
	os.WriteFile(s.Dir+"/summary", nil, 0o644)
	o2 := ownersOf(s)
	owner, _ = o2.Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	jobs, _ = Account(onGPU0(p), owner, gib)
	if len(jobs) != 1 || jobs[0].Kind != KindUnknown || jobs[0].Over() || o2.Unreadable != 1 {
		t.Errorf("jobs %+v, unreadable %d; want job 44 of unknown allocation, not over", jobs, o2.Unreadable)
	}
}

// TestSlurmDownAttributesNothing: without listpids no process is any job's.
func TestSlurmDownAttributesNothing(t *testing.T) {
	p, _ := child(t, "SLURM_JOB_ID=45", "SLURM_SHARDS_ON_NODE=1")
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "45", UID: os.Getuid(), Node: "t1", Shards: 1, PIDs: []int{p.Pid}})
	s.Fail(true)
	o := ownersOf(s)
	owner, poll := o.Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	jobs, un := Account(onGPU0(p), owner, gib)
	if poll.Err == nil || len(jobs) != 0 || un[0] != 30*gib || o.Failures != 1 {
		t.Errorf("jobs %+v unattributed %v err %v failures %d; want nothing attributed and the failure counted", jobs, un, poll.Err, o.Failures)
	}
	// A job is asked about once while it stays on the GPUs.
	s.Fail(false)
	for i := 0; i < 3; i++ {
		o.Owners(context.Background(), onGPU0(p), time.Unix(int64(i), 0))
	}
	if n := strings.Count(s.Calls(), "show job 45"); n != 1 {
		t.Errorf("show job 45 asked %d times over three polls, want 1", n)
	}
}

// onGPUs puts each process on its own GPU of an 80 GiB four-GPU node, 30 GiB each:
// the first on GPU 0, the next on GPU 1, ...
func onGPUs(procs ...*running) Snapshot {
	var s Snapshot
	for i := 0; i < 4; i++ {
		g := GPU{Index: i, Total: 80 * gib}
		if i < len(procs) {
			g.Procs = []Proc{{PID: procs[i].Pid, Used: 30 * gib, GI: NoInstance}}
		}
		s.GPUs = append(s.GPUs, g)
	}
	return s
}

// TestWholeGPUJobIsHeldToSlurmsGPU: Slurm gave job 46 GPU 1 (GRES gpu:h100:1(IDX:1));
// with ConstrainDevices off its process runs on GPU 0. That is not its allocation
// (which would make it 30 of 80 GiB, fine): it is memory on a GPU it was not given,
// and the kill policy kills it. In both scontrol forms.
func TestWholeGPUJobIsHeldToSlurmsGPU(t *testing.T) {
	for _, text := range []bool{false, true} {
		p, _ := child(t)
		s := slurmtest.New(t, text)
		s.SetJobs(slurmtest.Job{ID: "46", UID: os.Getuid(), Node: "t1", GPU: 1, PIDs: []int{p.Pid}})
		o := ownersOf(s)
		snap := onGPUs(p)
		owner, poll := o.Owners(context.Background(), snap, time.Unix(0, 0))
		jobs, _ := Account(snap, owner, gib)
		if poll.Err != nil || len(jobs) != 1 || jobs[0].Kind != KindGPU || jobs[0].Alloc != 80*gib || jobs[0].Used != 0 || jobs[0].Stray != 30*gib || !jobs[0].Over() {
			t.Fatalf("text %v: jobs %+v (%v); want job 46 given GPU 1, its 30 GiB on GPU 0 stray, over", text, jobs, poll.Err)
		}
		acts := (&Enforcer{UsagePolicy: PolicyKill, Confirm: confirmWith(o)}).Step(jobs, time.Unix(0, 0))
		if len(acts) != 2 || !strings.Contains(acts[0].Detail, "not given") {
			t.Errorf("text %v: actions %+v; want a warning naming the GPU it was not given, then the kill", text, acts)
		}
		if done, _ := exited(p, 5*time.Second); !done {
			t.Errorf("text %v: job 46's process on a GPU it was not given was not killed", text)
		}
	}
}

// TestEndedJobLeavesOrphans: job 47's process outlives it (slurmstepd still lists it,
// Slurm says the job is gone). Once squeue no longer lists the job, the process is an
// orphan on its GPU: not the job's use, and nothing kills it.
func TestEndedJobLeavesOrphans(t *testing.T) {
	p, _ := child(t)
	s := slurmtest.New(t, false)
	s.SetJobs(slurmtest.Job{ID: "47", UID: os.Getuid(), Node: "t1", Shards: 10, PIDs: []int{p.Pid}})
	o := ownersOf(s)
	o.Recheck = time.Second
	e := &Enforcer{UsagePolicy: PolicyKill, Grace: time.Minute, Confirm: confirmWith(o)}
	owner, _ := o.Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	a := Measure(onGPU0(p), owner, gib)
	if len(a.Jobs) != 1 || !a.Jobs[0].Over() || len(a.Orphans) != 0 {
		t.Fatalf("running: %+v; want job 47 over its 10 GiB", a)
	}
	e.Step(a.Jobs, time.Unix(0, 0)) // warned; the grace runs
	// The job ends; its process stays and slurmstepd still lists it.
	os.WriteFile(s.Dir+"/running", nil, 0o644)
	os.WriteFile(s.Dir+"/summary", nil, 0o644)
	owner, poll := o.Owners(context.Background(), onGPU0(p), time.Unix(2, 0))
	a = Measure(onGPU0(p), owner, gib)
	if poll.Err != nil || len(a.Jobs) != 0 || len(a.Orphans) != 1 || a.Orphans[0].Job != "47" || a.Orphaned[0] != 30*gib {
		t.Fatalf("ended: %+v (%v); want no job, one orphan of job 47 with 30 GiB on GPU 0", a, poll.Err)
	}
	if acts := e.Step(a.Jobs, time.Unix(600, 0)); len(acts) != 0 {
		t.Errorf("actions %+v on an ended job's orphan; want none", acts)
	}
	if done, _ := exited(p, 200*time.Millisecond); done {
		t.Errorf("an orphan was killed")
	}
	if _, err := o.Confirm(context.Background(), "47", []int{p.Pid}); err == nil {
		t.Errorf("Confirm vouched for a process of an ended job")
	}
	// gpumemd restarted after the job ended: Slurm's record of it says COMPLETED.
	os.WriteFile(s.Dir+"/job-47.json", []byte(fmt.Sprintf(`{"jobs": [{"job_id": 47, "job_state": ["COMPLETED"], "user_id": %d, "nodes": "t1"}]}`, os.Getuid())), 0o644)
	fresh := ownersOf(s)
	owner, _ = fresh.Owners(context.Background(), onGPU0(p), time.Unix(0, 0))
	if a = Measure(onGPU0(p), owner, gib); len(a.Jobs) != 0 || len(a.Orphans) != 1 {
		t.Errorf("after a restart: %+v; want job 47's process an orphan, not a job of unknown allocation", a)
	}
	fresh.Report(a)
	fresh.Report(a)
	if fresh.Orphans != 1 {
		t.Errorf("orphans counted %d over two reports of one process; want 1", fresh.Orphans)
	}
}
