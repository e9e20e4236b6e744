package usage

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// idleNode: on GPU 0, job 601 holds 8 shards and no GPU process, job 602 holds 8 and
// runs a 5 GiB process; job 603, interactive, holds 8 shards of GPU 1 idle; job 604
// holds 8 shards of GPU 2, where a process of no job holds 1 GiB (it could be 604's).
func idleNode(t *testing.T, text bool) (*slurmtest.Slurm, *Reclaimer, *[]string) {
	t.Helper()
	s := slurmtest.New(t, text)
	uid := os.Getuid()
	s.SetJobs(
		slurmtest.Job{ID: "601", UID: uid, Node: "t1", GPU: 0, Shards: 8, PIDs: []int{900001}},
		slurmtest.Job{ID: "602", UID: uid, Node: "t1", GPU: 0, Shards: 8, PIDs: []int{900002}},
		slurmtest.Job{ID: "603", UID: uid, Node: "t1", GPU: 1, Shards: 8, PIDs: []int{900003}, Interactive: true},
		slurmtest.Job{ID: "604", UID: uid, Node: "t1", GPU: 2, Shards: 8, PIDs: []int{900004}},
	)
	var told []string
	r := &Reclaimer{Node: "t1", IdlePolicy: IdleRequeue, After: time.Minute, Grace: time.Minute, Unit: gib,
		Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}, Scancel: slurmcli.Runner{Path: s.Scancel},
		Tell: func(job, msg string) { told = append(told, job+": "+msg) }}
	return s, r, &told
}

func idleSnapshot() (Snapshot, []Job, map[int]uint64) {
	s := Snapshot{GPUs: []GPU{{Index: 0, Total: 80 * gib}, {Index: 1, Total: 80 * gib}, {Index: 2, Total: 80 * gib}}}
	jobs := []Job{{ID: "602", Kind: KindShard, Alloc: 8 * gib, Used: 5 * gib, GPUs: []JobGPU{{GPU: 0, Used: 5 * gib, PIDs: []int{900002}}}}}
	return s, jobs, map[int]uint64{2: gib}
}

func TestIdleJobIsWarnedThenRequeuedWithItsReason(t *testing.T) {
	for _, text := range []bool{false, true} {
		s, r, told := idleNode(t, text)
		snap, jobs, un := idleSnapshot()
		t0 := time.Unix(1000, 0)
		idle := r.Step(context.Background(), snap, jobs, un, false, t0)
		if len(idle) != 2 || idle[0].ID != "601" || idle[0].Exempt != "" || idle[0].Alloc != 8*gib || idle[1].ID != "603" || idle[1].Exempt != "interactive" {
			t.Fatalf("text %v: idle %+v; want 601 (8 GiB) and 603 (exempt: interactive); 602 is busy, 604 uncertain", text, idle)
		}
		r.Step(context.Background(), snap, jobs, un, false, t0.Add(30*time.Second))
		if len(*told) != 0 {
			t.Fatalf("warned before IdleAfter: %v", *told)
		}
		r.Step(context.Background(), snap, jobs, un, false, t0.Add(time.Minute))
		if len(*told) != 1 || !strings.HasPrefix((*told)[0], "601: gpumem: job 601 holds 8.0 GiB of GPU memory on t1 (GPU 0) with no GPU process for 1m0s; it will be requeued in 1m0s") {
			t.Fatalf("told %q; want one warning to 601", *told)
		}
		if strings.Contains(s.Calls(), "requeue") {
			t.Fatal("requeued before the grace ended")
		}
		r.Step(context.Background(), snap, jobs, un, false, t0.Add(2*time.Minute))
		r.Step(context.Background(), snap, jobs, un, false, t0.Add(3*time.Minute))
		calls := s.Calls()
		if !strings.Contains(calls, "update JobId=601 AdminComment=gpumem: job 601 holds 8.0 GiB of GPU memory on t1 (GPU 0) with no GPU process for 2m0s; requeued by gpumemd's idle policy") ||
			strings.Count(calls, "requeue 601") != 1 {
			t.Errorf("text %v: calls\n%s\nwant the reason in 601's AdminComment, then one requeue", text, calls)
		}
		for _, other := range []string{"602", "603", "604"} {
			if strings.Contains(calls, "JobId="+other) || strings.Contains(calls, "requeue "+other) || strings.Contains(strings.Join(*told, "\n"), other+":") {
				t.Errorf("job %s was acted on:\n%s", other, calls)
			}
		}
		if r.Actions["warn"] != 1 || r.Actions["requeue"] != 1 {
			t.Errorf("actions %v", r.Actions)
		}
	}
}

// When Slurm cannot say who runs the GPU processes, no job is idle: its processes could
// be any of them.
func TestNoIdleWhileAttributionFails(t *testing.T) {
	_, r, _ := idleNode(t, false)
	snap, jobs, un := idleSnapshot()
	if idle := r.Step(context.Background(), snap, jobs, un, true, time.Unix(0, 0)); len(idle) != 0 {
		t.Fatalf("idle %+v while attribution failed", idle)
	}
}

// Exempt accounts and QOS are never acted on; a job whose QOS cannot be read is exempt
// when QOS exemptions exist.
func TestIdleExemptions(t *testing.T) {
	s, r, told := idleNode(t, false)
	s.SetJobs(
		slurmtest.Job{ID: "701", UID: os.Getuid(), Node: "t1", GPU: 0, Shards: 4, PIDs: []int{1}, Account: "admin", QOS: "normal"},
		slurmtest.Job{ID: "702", UID: os.Getuid(), Node: "t1", GPU: 1, Shards: 4, PIDs: []int{2}, Account: "physics", QOS: "debug"},
		slurmtest.Job{ID: "703", UID: os.Getuid(), Node: "t1", GPU: 0, Shards: 4, PIDs: []int{3}, Account: "physics"},
		slurmtest.Job{ID: "704", UID: os.Getuid(), Node: "t1", GPU: 1, Shards: 4, PIDs: []int{4}, Account: "physics", QOS: "normal"},
	)
	r.ExemptAccounts, r.ExemptQOS, r.IdlePolicy = []string{"admin"}, []string{"debug"}, IdleWarn
	snap := Snapshot{GPUs: []GPU{{Index: 0, Total: 80 * gib}, {Index: 1, Total: 80 * gib}}}
	var idle []IdleJob
	for i := 0; i < 3; i++ {
		idle = r.Step(context.Background(), snap, nil, nil, false, time.Unix(int64(i)*60, 0))
	}
	got := map[string]string{}
	for _, j := range idle {
		got[j.ID] = j.Exempt
	}
	want := map[string]string{"701": "account admin", "702": "QOS debug", "703": "QOS unknown", "704": ""}
	for id, w := range want {
		if e, ok := got[id]; !ok || e != w {
			t.Errorf("job %s: exempt %q (idle %v), want %q", id, e, ok, w)
		}
	}
	if len(*told) != 1 || !strings.HasPrefix((*told)[0], "704: ") {
		t.Errorf("told %q; want only 704 warned", *told)
	}
}

// TestUnmeasuredMemoryIsNotIdle: job 601's one process holds memory NVML gave no size
// for, and job 603's holds memory only on a GPU it was not given. Neither is idle: a
// size not known, or use in the wrong place, is still use.
func TestUnmeasuredMemoryIsNotIdle(t *testing.T) {
	_, r, _ := idleNode(t, false)
	snap, jobs, un := idleSnapshot()
	jobs = append(jobs, Job{ID: "601", Kind: KindShard, Alloc: 8 * gib, UnknownSize: 1, GPUs: []JobGPU{{GPU: 0, PIDs: []int{900001}}}},
		Job{ID: "603", Kind: KindGPU, Stray: gib, GPUs: []JobGPU{{GPU: 2, Stray: gib, PIDs: []int{900003}}}})
	for _, j := range r.Step(context.Background(), snap, jobs, un, false, time.Unix(1000, 0)) {
		if j.ID == "601" || j.ID == "603" {
			t.Errorf("job %s found idle: %+v", j.ID, j)
		}
	}
}
