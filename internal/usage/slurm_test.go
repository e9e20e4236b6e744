package usage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// liars is a node whose three jobs all claim 80 shards in their environment: job 42 on
// GPU 0 (cgroup), job 43 on GPU 1 (environment only, as on a node without Slurm's
// cgroup plugin) and job 44 on GPU 1, which Slurm has already forgotten.
func liars(t *testing.T) (Snapshot, OwnerFunc) {
	t.Helper()
	root := t.TempDir()
	fakeProc(t, root, 10, "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", "SLURM_JOB_ID=42", "SLURM_SHARDS_ON_NODE=80")
	fakeProc(t, root, 11, "0::/user.slice\n", "SLURM_JOB_ID=43", "SLURM_SHARDS_ON_NODE=80")
	fakeProc(t, root, 12, "0::/user.slice\n", "SLURM_JOB_ID=44", "SLURM_SHARDS_ON_NODE=80")
	s := Snapshot{GPUs: []GPU{
		{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: 10, Used: 30 * gib, GI: NoInstance}}},
		{Index: 1, Total: 80 * gib, Procs: []Proc{{PID: 11, Used: 6 * gib, GI: NoInstance}, {PID: 12, Used: 2 * gib, GI: NoInstance}}},
	}}
	return s, Procfs{Root: root}.Owner
}

// Both releases' forms of the same allocation, recorded shapes: 42 holds 20 shards of
// GPU 0 and 43 holds 4 shards of GPU 1 on n1; 44 is not running. Other nodes and
// jobs are there to be ignored.
var slurmForms = map[string]string{
	"22.05": `JobId=42 JobName=a JobState=RUNNING Reason=None NumCPUs=1   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:20(IDX:0)
JobId=43 JobName=b JobState=RUNNING Reason=None NumCPUs=1   Nodes=n1 CPU_IDs=1 Mem=0 GRES=shard:4(IDX:1)   Nodes=n2 CPU_IDs=0 Mem=0 GRES=shard:9(IDX:0)
JobId=44 JobName=c JobState=COMPLETED Reason=None   Nodes=n1 CPU_IDs=2 Mem=0 GRES=shard:2(IDX:1)
JobId=45 JobName=d JobState=PENDING Reason=Resources TresPerNode=gres/shard:8
`,
	"24.11": `JobId=42 JobName=a JobState=RUNNING Reason=None NumCPUs=1 JOB_GRES=shard:20   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:20(20/80,0/80) MinCPUsNode=1
JobId=43 JobName=b JobState=RUNNING Reason=None NumCPUs=1 JOB_GRES=shard:13   Nodes=n1 CPU_IDs=1 Mem=0 GRES=shard:4(0/80,4/80)   Nodes=n2 CPU_IDs=0 Mem=0 GRES=shard:9(9/80,0/80)
JobId=46 JobName=e JobState=RUNNING JOB_GRES=gpu:h100:1   Nodes=n1 CPU_IDs=3 Mem=0 GRES=gpu:h100:1(IDX:2)
`,
}

func TestAllocationFromSlurmEvenWhenTheEnvironmentLies(t *testing.T) {
	for rel, out := range slurmForms {
		t.Run(rel, func(t *testing.T) {
			s, procOwner := liars(t)
			calls := 0
			a := &Allocations{Node: "n1", Query: func(context.Context) (string, error) { calls++; return out, nil }}
			owner, poll := a.Owners(s, procOwner, time.Unix(0, 0))
			if poll.Err != nil || len(poll.FromEnv) != 0 || strings.Join(poll.Ended, ",") != "44" {
				t.Fatalf("poll %+v; want no error, no job from the environment, job 44 ended", poll)
			}
			jobs, un := Account(s, owner, gib)
			if len(jobs) != 2 || jobs[0].ID != "42" || jobs[1].ID != "43" {
				t.Fatalf("jobs %+v; want 42 and 43 (44 has ended)", jobs)
			}
			if j := jobs[0]; j.Kind != KindShard || j.Alloc != 20*gib || !j.Over() {
				t.Errorf("job 42 = %+v; want Slurm's 20 GiB of shards, over with 30 GiB used", j)
			}
			if j := jobs[1]; j.Kind != KindShard || j.Alloc != 4*gib || !j.Over() {
				t.Errorf("job 43 = %+v; want Slurm's 4 GiB on n1 (not n2's 9), over with 6 GiB used", j)
			}
			if un[1] != 2*gib {
				t.Errorf("unattributed %v; want job 44's 2 GiB on GPU 1", un)
			}
			// The same jobs next poll: nothing new, so Slurm is not asked again.
			if _, poll := a.Owners(s, procOwner, time.Unix(10, 0)); calls != 1 || poll.Err != nil {
				t.Errorf("%d queries over two polls of the same jobs (poll %+v); want 1", calls, poll)
			}
			if a.EnvJobs != 0 {
				t.Errorf("EnvJobs = %d; want 0 while Slurm answers", a.EnvJobs)
			}
		})
	}
}

func TestAllocationFallsBackToEnvironmentWhenSlurmFails(t *testing.T) {
	s, procOwner := liars(t)
	var logged bytes.Buffer
	fail := true
	calls := 0
	a := &Allocations{Node: "n1", RetryAfter: time.Minute, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Query: func(context.Context) (string, error) {
			calls++
			if fail {
				return "", errors.New("scontrol: slurm_load_jobs error: Unable to contact slurm controller")
			}
			return slurmForms["24.11"], nil
		}}
	t0 := time.Unix(0, 0)
	for i := 0; i < 3; i++ {
		owner, poll := a.Owners(s, procOwner, t0.Add(time.Duration(i)*time.Second))
		if i == 0 && poll.Err == nil {
			t.Fatal("a failed query was not reported")
		}
		if strings.Join(poll.FromEnv, ",") != "42,43,44" {
			t.Errorf("poll %d: FromEnv %v; want all three jobs", i, poll.FromEnv)
		}
		jobs, _ := Account(s, owner, gib)
		if len(jobs) != 3 || jobs[0].Alloc != 80*gib {
			t.Errorf("poll %d: jobs %+v; want the environment's 80 shards for all three", i, jobs)
		}
	}
	if calls != 1 {
		t.Errorf("%d queries within RetryAfter; want 1", calls)
	}
	log := logged.String()
	if n := strings.Count(log, "taken from the job's environment"); n != 3 || !strings.Contains(log, "alloc_source=environment") ||
		!strings.Contains(log, "env_alloc_jobs=3") || !strings.Contains(log, "Unable to contact slurm controller") {
		t.Errorf("log should warn once per job measured by its environment, with the count and Slurm's error:\n%s", log)
	}
	if a.EnvJobs != 3 || a.Failures != 1 {
		t.Errorf("EnvJobs %d Failures %d; want 3 and 1", a.EnvJobs, a.Failures)
	}
	// Slurm answers again after RetryAfter: its allocation wins, the ended job goes.
	fail = false
	owner, poll := a.Owners(s, procOwner, t0.Add(2*time.Minute))
	jobs, _ := Account(s, owner, gib)
	if poll.Err != nil || len(poll.FromEnv) != 0 || len(jobs) != 2 || jobs[0].Alloc != 20*gib || jobs[1].Alloc != 4*gib {
		t.Errorf("after Slurm came back: poll %+v jobs %+v; want Slurm's 20 and 4 GiB", poll, jobs)
	}
	if !strings.Contains(logged.String(), "Slurm answers again") {
		t.Errorf("recovery not logged:\n%s", logged.String())
	}
}

func TestOddScontrolOutputFallsBackWithAClearError(t *testing.T) {
	s, procOwner := liars(t)
	for _, out := range []string{
		"JobId=42 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:20(x/80)",
		"JobId=42 JobState=RUNNING   Nodes=n[1-0 CPU_IDs=0 Mem=0 GRES=shard:20(20/80)",
		"\x00garbage(((",
	} {
		a := &Allocations{Node: "n1", Query: func(context.Context) (string, error) { return out, nil }}
		owner, poll := a.Owners(s, procOwner, time.Unix(0, 0))
		if out == "\x00garbage(((" {
			// Nothing running: every job ended.
			if poll.Err != nil || len(poll.Ended) != 3 {
				t.Errorf("%q: poll %+v; want all jobs ended", out, poll)
			}
			continue
		}
		if poll.Err == nil || !strings.Contains(poll.Err.Error(), "scontrol -d -o show job") || len(poll.FromEnv) != 3 {
			t.Errorf("%q: poll %+v; want an error naming scontrol and the environment as fallback", out, poll)
		}
		if jobs, _ := Account(s, owner, gib); len(jobs) != 3 {
			t.Errorf("%q: jobs %+v; want all three measured", out, jobs)
		}
	}
	a := &Allocations{Node: "n1"}
	if _, poll := a.Owners(s, procOwner, time.Unix(0, 0)); poll.Err == nil || len(poll.FromEnv) != 3 {
		t.Errorf("no Query: poll %+v; want an error and the environment", poll)
	}
}

func TestScontrolRunsTheCommandWithATimeout(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "scontrol")
	os.WriteFile(ok, []byte("#!/bin/sh\n[ \"$*\" = \"-d -o show job\" ] || exit 3\necho JobId=1 JobState=RUNNING\n"), 0o755)
	if out, err := Scontrol(ok)(context.Background()); err != nil || !strings.HasPrefix(out, "JobId=1") {
		t.Errorf("scontrol: %q, %v", out, err)
	}
	if _, err := Scontrol(filepath.Join(dir, "none"))(context.Background()); err == nil || !strings.Contains(err.Error(), "none -d -o show job") {
		t.Errorf("missing scontrol: err %v; want one naming the command", err)
	}
	hung := filepath.Join(dir, "hung")
	os.WriteFile(hung, []byte("#!/bin/sh\nsleep 30\n"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Scontrol(hung)(ctx); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("hung scontrol: err %v after %s; want an error within the timeout", err, time.Since(start))
	}
}
