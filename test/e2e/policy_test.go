//go:build e2e

package e2e

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The accounting recipes of docs/policy.md, against the lab's real slurmdbd: GPU-memory
// quotas, QOS preemption with requeue, billing by GiB and gpumemctl report.

// labDir is the lab's state directory, as the lab (the chroot for 24.11) sees it.
func labDir() string { return "/var/lib/gpumem-lab/" + release }

// gpumemctl runs the lab's copy of gpumemctl inside the lab, so sacct and scontrol
// are the release's own.
func gpumemctl(t *testing.T, args ...string) string {
	t.Helper()
	return ok(t, append([]string{labDir() + "/bin/gpumemctl"}, args...)...)
}

// needAccounting skips when the lab was started with LAB_ACCOUNTING=0.
func needAccounting(t *testing.T) {
	t.Helper()
	if !strings.Contains(ok(t, "scontrol", "show", "config"), "accounting_storage/slurmdbd") {
		t.Skip("the lab runs without slurmdbd (LAB_ACCOUNTING=0)")
	}
}

// cleanAll cancels every job of root and of the lab user.
func cleanAll(t *testing.T) {
	t.Helper()
	ok(t, "scancel", "--quiet", "-u", labUser)
	clean(t)
}

// sbatchUser submits a 300 s sleep as user (root or the lab user) with args.
func sbatchUser(t *testing.T, user string, args ...string) string {
	t.Helper()
	cmd := append([]string{"sbatch", "--parsable", "-o", "/dev/null"}, args...)
	cmd = append(cmd, "--wrap", "sleep 300")
	if user != "root" {
		cmd = append([]string{"runuser", "-u", user, "--"}, cmd...)
	}
	id := strings.TrimSpace(ok(t, cmd...))
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("sbatch %v: job id %q", args, id)
	}
	return id
}

// stateReason is a job's state and pending reason.
func stateReason(t *testing.T, id string) (string, string) {
	f := strings.Fields(ok(t, "squeue", "-h", "-j", id, "-o", "%T %r"))
	if len(f) < 2 {
		return "", ""
	}
	return f[0], f[1]
}

// waitPending waits until job id pends for a reason containing want.
func waitPending(t *testing.T, id, want string) string {
	t.Helper()
	var st, why string
	if !eventually(30*time.Second, func() bool {
		st, why = stateReason(t, id)
		return st == "PENDING" && strings.Contains(why, want)
	}) {
		t.Fatalf("job %s: %s (%s) after 30s, want PENDING for %s\n%s", id, st, why, want, ok(t, "squeue"))
	}
	return why
}

func TestQuotaHoldsAndReleases(t *testing.T) {
	needAccounting(t)
	ensureLabUser(t)
	cleanAll(t)
	// The quota lines come from gpumemctl policy, as an admin gets them.
	out := gpumemctl(t, "policy", "--inventory", labDir()+"/inv", "--quota", "account:teama=60g", "--quota", "user:"+labUser+"@teama=30g")
	var lines int
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "sacctmgr ") {
			ok(t, strings.Fields(l)...)
			lines++
		}
	}
	if lines != 2 {
		t.Fatalf("gpumemctl policy printed %d sacctmgr lines, want 2:\n%s", lines, out)
	}
	t.Cleanup(func() {
		cleanAll(t)
		ok(t, "sacctmgr", "-i", "modify", "account", "teama", "set", "GrpTRES=billing=-1")
		ok(t, "sacctmgr", "-i", "modify", "user", labUser, "where", "account=teama", "set", "GrpTRES=billing=-1")
	})
	// The user holds 20 of its 30 GiB; its second 20 GiB would make 40: held.
	u1 := sbatchUser(t, labUser, "-p", "train", "--gres=gpu:mem:20g")
	waitState(t, u1, "RUNNING")
	u2 := sbatchUser(t, labUser, "-p", "train", "--gres=gpu:mem:20g")
	why := waitPending(t, u2, "Billing")
	// The account: the user's 20 plus a 3g.20gb MIG instance (20 GiB) of root's = 40 of
	// 60; 30 GiB more would be 70: held, while a 10 GiB job still runs.
	r1 := sbatchUser(t, "root", "-A", "teama", "-p", "train", "--gres=gpu:3g.20gb:1")
	waitState(t, r1, "RUNNING")
	r2 := sbatchUser(t, "root", "-A", "teama", "-p", "train", "--gres=gpu:mem:30g")
	waitPending(t, r2, "Billing")
	r3 := sbatchUser(t, "root", "-A", "teama", "-p", "train", "--gres=gpu:mem:10g")
	waitState(t, r3, "RUNNING")
	t.Logf("held: job %s (%s), job %s\n%s", u2, why, r2, ok(t, "squeue", "-o", "%i %u %a %b %T %r"))

	// gpumem names the quota and what is left, for the user and the account.
	ex := gpumemctl(t, "quota", u2)
	for _, want := range []string{"user " + labUser + " in account teama", "30 GiB", "holds 20 GiB", "10 GiB left", "needs 20 GiB"} {
		if !strings.Contains(ex, want) {
			t.Errorf("gpumemctl quota %s lacks %q:\n%s", u2, want, ex)
		}
	}
	ex = gpumemctl(t, "quota", r2)
	for _, want := range []string{"account teama", "60 GiB", "holds 50 GiB", "10 GiB left", "needs 30 GiB"} {
		if !strings.Contains(ex, want) {
			t.Errorf("gpumemctl quota %s lacks %q:\n%s", r2, want, ex)
		}
	}
	t.Logf("gpumemctl quota %s:\n%s", r2, ex)

	// Room again: the held jobs run, each once its quota has it.
	ok(t, "scancel", u1)
	waitState(t, u2, "RUNNING")
	if st, _ := stateReason(t, r2); st != "PENDING" {
		t.Errorf("job %s: %s with 60 of 60 GiB held, want still PENDING", r2, st)
	}
	ok(t, "scancel", r1)
	waitState(t, r2, "RUNNING")
}

// gpuOf is the device file of the one GPU whose shards a job holds.
func gpuOf(t *testing.T, g labGres, id string) string {
	t.Helper()
	j := showJob(t, g, id)
	if len(j.uses) != 1 {
		t.Fatalf("job %s holds %d GPUs (%+v), want the shards of one", id, len(j.uses), j.uses)
	}
	return j.uses[0].dev.node + ":" + j.uses[0].dev.file
}

func TestQOSPreemptsAndRequeues(t *testing.T) {
	needAccounting(t)
	cleanAll(t)
	t.Cleanup(func() { cleanAll(t) })
	// Two low jobs fill both H100s (only they hold 60 GiB).
	l1 := sbatchUser(t, "root", "--qos=low", "-p", "train", "--gres=gpu:mem:60g")
	l2 := sbatchUser(t, "root", "--qos=low", "-p", "train", "--gres=gpu:mem:60g")
	waitState(t, l1, "RUNNING")
	waitState(t, l2, "RUNNING")
	g := readGres(t)
	gpus := map[string]string{l1: gpuOf(t, g, l1), l2: gpuOf(t, g, l2)}
	// A high job of the same size preempts one of them, requeued, and runs on its GPU.
	// The high job holds its GPU until the test cancels it, so timing never decides
	// whether the requeued job is seen waiting for it.
	h := strings.TrimSpace(ok(t, "sbatch", "--parsable", "-o", "/dev/null", "--qos=high", "-p", "train", "--gres=gpu:mem:60g", "--wrap", "sleep 300"))
	waitState(t, h, "RUNNING")
	var victim string
	if !eventually(30*time.Second, func() bool {
		for _, l := range []string{l1, l2} {
			if st, _ := stateReason(t, l); st == "PENDING" {
				victim = l
				return true
			}
		}
		return false
	}) {
		t.Fatalf("high job %s runs but no low job was requeued:\n%s", h, ok(t, "squeue", "-o", "%i %q %b %T %r"))
	}
	if dev := gpuOf(t, g, h); dev != gpus[victim] {
		t.Errorf("high job %s on GPU %s; the requeued job %s had GPU %s", h, dev, victim, gpus[victim])
	}
	t.Logf("job %s (qos high) requeued job %s (qos low) on GPU %s:\n%s", h, victim, gpus[victim], ok(t, "squeue", "-o", "%i %q %b %T %r"))
	// Slurm lets a requeued job start again only after its credential lifetime (BeginTime
	// now+121 s by default); an admin may bring that forward, as here to keep the test
	// short. It still waits for its GPU while the high job holds it, then runs again.
	if _, why := stateReason(t, victim); why != "BeginTime" {
		t.Logf("requeued job %s pends for %s", victim, why)
	}
	ok(t, "scontrol", "update", "jobid="+victim, "StartTime=now")
	// For a few scheduling passes (bf_interval is 1 s in the lab) it still waits.
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		if st, why := stateReason(t, h); st != "RUNNING" {
			t.Fatalf("high job %s is %s (%s); it should hold its GPU until cancelled", h, st, why)
		}
		if vst, vwhy := stateReason(t, victim); vst != "PENDING" {
			t.Fatalf("requeued job %s is %s (%s) while the high job holds its GPU", victim, vst, vwhy)
		}
	}
	ok(t, "scancel", h)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, _ := stateReason(t, victim); st == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requeued job %s did not run again within 60s:\n%s", victim, ok(t, "squeue", "-o", "%i %q %b %T %r %S"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	runs := ok(t, "sacct", "-D", "-X", "-P", "-n", "--format=JobID,QOS,State", "-j", victim)
	if strings.Count(runs, victim+"|low|") != 2 || !regexp.MustCompile(`\|(PREEMPTED|REQUEUED)`).MatchString(runs) {
		t.Errorf("sacct -D of job %s: want a preempted run and a second one:\n%s", victim, runs)
	}
	t.Logf("sacct -D -j %s:\n%s", victim, runs)
}

// sacctJob is one finished job as sacct has it.
type sacctJob struct {
	billing   float64
	elapsed   int64
	partition string
}

func sacctJobs(t *testing.T, ids []string) map[string]sacctJob {
	t.Helper()
	out := ok(t, "sacct", "-X", "-P", "-n", "--format=JobID,Partition,AllocTRES,ElapsedRaw,State", "-j", strings.Join(ids, ","))
	m := map[string]sacctJob{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, "|")
		if len(f) != 5 || f[4] != "COMPLETED" {
			t.Fatalf("sacct: %q, want a COMPLETED job", l)
		}
		j := sacctJob{elapsed: atoi(t, f[3]), partition: f[1], billing: -1}
		for _, kv := range strings.Split(f[2], ",") {
			if v, found := strings.CutPrefix(kv, "billing="); found {
				j.billing = float64(atoi(t, v))
			}
		}
		m[f[0]] = j
	}
	return m
}

func TestBillingByGPUMemoryAndReport(t *testing.T) {
	needAccounting(t)
	cleanAll(t)
	t.Cleanup(func() { cleanAll(t) })
	// The period starts on the next whole second, after every earlier job has ended:
	// sacct keeps whole seconds, and an earlier test's teamb run that overlapped the
	// period would be summed by the report but not by this test.
	start := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(start))
	kinds := []struct {
		name string
		args []string
		gib  float64
	}{
		{"20 GiB slice", []string{"-p", "train", "--gres=gpu:mem:20g"}, 20},
		{"3g.20gb MIG instance", []string{"-p", "train", "--gres=gpu:3g.20gb:1"}, 20},
		{"20 shards: a quarter of an H100", []string{"-p", "train", "-w", "n1", "--gres=shard:20"}, 20},
		{"whole H100", []string{"-p", "train", "--gres=gpu:h100:1"}, 80},
		{"22 GiB slice of an L4", []string{"-p", "inference", "--gres=gpu:mem:22g"}, 22},
		{"whole L4", []string{"-p", "inference", "--gres=gpu:l4:1"}, 22},
	}
	var ids []string
	for _, k := range kinds {
		args := append([]string{"sbatch", "--parsable", "-o", "/dev/null", "-A", "teamb"}, k.args...)
		ids = append(ids, strings.TrimSpace(ok(t, append(args, "--wrap", "sleep 2")...)))
	}
	for _, id := range ids {
		if !eventually(60*time.Second, func() bool { return strings.TrimSpace(ok(t, "squeue", "-h", "-j", id, "-o", "%i")) == "" }) {
			t.Fatalf("job %s still queued after 60s:\n%s", id, ok(t, "squeue"))
		}
	}
	var jobs map[string]sacctJob
	// slurmdbd can have a job's end before its partition (seen on a loaded 22.05 lab:
	// COMPLETED with an empty partition for a few seconds), and the report sums by
	// partition: wait for both.
	if !eventually(60*time.Second, func() bool {
		r := slurm(t, 30*time.Second, "", "sacct", "-X", "-P", "-n", "--format=Partition,State", "-j", strings.Join(ids, ","))
		return len(regexp.MustCompile(`(?m)^[^|\s]+\|COMPLETED$`).FindAllString(r.out, -1)) == len(ids)
	}) {
		t.Fatalf("sacct does not have all %d jobs completed in their partitions", len(ids))
	}
	jobs = sacctJobs(t, ids)
	want := map[string]float64{} // partition -> GiB·h, from sacct's own figures
	for i, k := range kinds {
		j := jobs[ids[i]]
		if j.billing != k.gib {
			t.Errorf("%s (job %s): billing %v, want %v GiB", k.name, ids[i], j.billing, k.gib)
		}
		want[j.partition] += j.billing * float64(j.elapsed) / 3600
	}
	t.Logf("billing per job: %v", jobs)
	// gpumemctl report over the same period, from the same accounting database.
	out := gpumemctl(t, "report", "--inventory", labDir()+"/inv", "-A", "teamb", "-o", "json",
		"-S", start.Format("2006-01-02T15:04:05"), "-E", time.Now().Add(2*time.Second).Format("2006-01-02T15:04:05"))
	var rep struct {
		Version int `json:"version"`
		Rows    []struct {
			Account, User, Partition string
			Runs                     int     `json:"runs"`
			Alloc                    float64 `json:"alloc_gib_hours"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Version != 1 {
		t.Fatalf("report -o json: %v\n%s", err, out)
	}
	got := map[string]float64{}
	for _, r := range rep.Rows {
		if r.Account != "teamb" || r.User != "root" {
			t.Errorf("row %+v: only root's teamb jobs ran", r)
		}
		got[r.Partition] += r.Alloc
	}
	for p, w := range want {
		if math.Abs(got[p]-w) > 1e-6 {
			t.Errorf("partition %s: report %v GiB·h, sacct says %v", p, got[p], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("report partitions %v, want %v", got, want)
	}
	t.Logf("gpumemctl report:\n%s", gpumemctl(t, "report", "--inventory", labDir()+"/inv", "-A", "teamb", "-S", start.Format("2006-01-02T15:04:05")))
}
