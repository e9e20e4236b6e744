//go:build e2e

package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every job shape a user can submit meets the fence on a node that promised one: each
// gets the limit of its own record on the directory Slurm made for it, or none where
// it holds no shard there; none drains the node, none runs unfenced.

// taskIDs are the job ids of an array's tasks once each runs.
func taskIDs(t *testing.T, master string, n int) []string {
	t.Helper()
	var ids []string
	if !eventually(60*time.Second, func() bool {
		ids = strings.Fields(ok(t, "squeue", "-h", "-j", master, "-t", "RUNNING", "-o", "%A"))
		return len(ids) == n
	}) {
		t.Fatalf("array %s: running tasks %v; want %d", master, ids, n)
	}
	return ids
}

// An array's tasks (the first task's id is the array's master id, for which Slurm
// prints every task's record) are fenced each on its own cgroup with its own limit; a
// CPU-only array on the same node runs with none.
func TestFenceArray(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	master := sbatchAs(t, "--hold", "--output=/dev/null", "--array=0-1", "--wrap", f.jobScript())
	ok(t, "scontrol", "release", master)
	ids := taskIDs(t, master, 2)
	var dirs []string
	for _, id := range ids {
		r := f.run(t, id, f.seen(t, id), false)
		r.fenced(t, 4<<30)
		dirs = append(dirs, r.dir)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("both tasks in one cgroup %s", dirs[0])
	}
	notDrained(t)

	// CPU only: no gres at all, on the fence node.
	r := slurm(t, 30*time.Second, "", "runuser", "-u", labUser, "--", "sbatch", "-p", "inference", "--hold", "--output=/dev/null",
		"--array=0-1", "--wrap", f.jobScript())
	m := submittedRE.FindStringSubmatch(r.out)
	if r.code != 0 || m == nil {
		t.Fatalf("CPU-only array: %s", r)
	}
	ok(t, "scontrol", "release", m[1])
	for _, id := range taskIDs(t, m[1], 2) {
		run := f.run(t, id, f.seen(t, id), false)
		run.unfenced(t)
		dirs = append(dirs, run.dir)
	}
	if stray := f.strayLimits(t, dirs...); len(stray) != 0 {
		t.Errorf("limits on other cgroups: %+v", stray)
	}
	notDrained(t)
}

// hetScript is a heterogeneous batch job of two components, each given by its sbatch
// options (Slurm puts a hetjob's components on separate nodes); a step in each
// component leaves its cgroup where the test reads it (by het group), then the script
// waits for the test.
func hetScript(c0, c1 string) string {
	return "#!/bin/sh\n#SBATCH --output=/dev/null " + c0 + "\n#SBATCH hetjob\n#SBATCH " + c1 + "\n" +
		"for g in 0 1; do srun --het-group=$g sh -c \"grep '^0::' /proc/self/cgroup > /tmp/gpumem-fence-cg-$SLURM_JOB_ID-g$g\"; done\n" +
		"for i in $(seq 300); do [ -e /tmp/gpumem-fence-go-$SLURM_JOB_ID ] && break; sleep 0.2; done\n"
}

// A heterogeneous job's components each get their own record's limit on their own
// cgroup (the leader's id is one Slurm answers with every component), or none for a
// component without a slice: the fenced node holds the leader with a slice, a
// component after the leader with a slice, or a leader without one.
func TestFenceHetjob(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	const fenced = "-p inference --gres=gpu:mem:4g"
	var all []string // every component's cgroup so far
	for _, c := range []struct {
		name, c0, c1 string
		sets         [2]int // limits on each component's cgroup
	}{
		{"leader with a slice", fenced, "-p gpu -w n1", [2]int{1, 0}},
		{"second component with a slice", "-p gpu -w n1", fenced, [2]int{0, 1}},
		{"leader without one", "-p inference", "-p gpu -w n2 --gres=gpu:mem:4g", [2]int{0, 0}},
	} {
		r := slurm(t, 30*time.Second, hetScript(c.c0, c.c1), "runuser", "-u", labUser, "--", "sbatch")
		m := submittedRE.FindStringSubmatch(r.out)
		if r.code != 0 || m == nil {
			t.Fatalf("%s: sbatch: %s", c.name, r)
		}
		leader := m[1]
		t.Cleanup(func() {
			for _, g := range []string{"g0", "g1"} {
				os.Remove(hostPath("/tmp/gpumem-fence-cg-" + leader + "-" + g))
			}
			os.Remove(hostPath("/tmp/gpumem-fence-go-" + leader))
		})
		var dirs [2]string
		for g := range dirs {
			dirs[g] = f.jobCgroup(t, leader+"-g"+string(rune('0'+g)))
		}
		letGo(t, leader)
		waitGone(t, leader)
		for g, want := range c.sets {
			sets, _ := f.limitsOn(t, dirs[g])
			if len(sets) != want || want == 1 && sets[0].Hard != 4<<30 {
				t.Errorf("%s: component %d (%s): sets %+v; want %d of 4 GiB", c.name, g, dirs[g], sets, want)
			}
		}
		all = append(all, dirs[0], dirs[1])
		if stray := f.strayLimits(t, all...); len(stray) != 0 {
			t.Errorf("%s: limits on other cgroups: %+v", c.name, stray)
		}
		notDrained(t)
	}
}

var grantedRE = regexp.MustCompile(`Granted job allocation (\d+)`)

// salloc --no-shell starts only the extern step: the limit is on the job's cgroup
// before any step, and a step (and anything adopted into the extern step) runs below
// it; the allocation's end leaves nothing.
func TestFenceSallocNoShell(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	r := slurm(t, 60*time.Second, "", "runuser", "-u", labUser, "--", "salloc", "--no-shell", "-p", "inference", "--gres=gpu:mem:4g")
	m := grantedRE.FindStringSubmatch(r.out + r.err)
	if r.code != 0 || m == nil {
		t.Fatalf("salloc --no-shell: %s", r)
	}
	id := m[1]
	t.Cleanup(func() { os.Remove(hostPath("/tmp/gpumem-fence-cg-" + id)) })
	waitState(t, id, "RUNNING")
	step := slurm(t, 60*time.Second, "", "runuser", "-u", labUser, "--", "srun", "--jobid="+id, "--overlap", "sh", "-c",
		"grep '^0::' /proc/self/cgroup > /tmp/gpumem-fence-cg-"+id)
	if step.code != 0 {
		t.Fatalf("a step of the allocation: %s", step)
	}
	dir := f.jobCgroup(t, id)
	sets, _ := f.limitsOn(t, dir)
	if len(sets) != 1 || sets[0].Hard != 4<<30 {
		t.Fatalf("allocation %s (%s): sets %+v; want one 4 GiB limit, set at allocation", id, dir, sets)
	}
	ok(t, "scancel", id)
	waitGone(t, id)
	if f.recordLeft(t, id) {
		t.Errorf("record of %s left", id)
	}
	eventually(10*time.Second, func() bool { _, err := os.Stat(hostPath(dir)); return err != nil })
	if _, err := os.Stat(hostPath(dir)); err == nil {
		t.Errorf("cgroup %s outlived the allocation", dir)
	}
	notDrained(t)
}

// Job names and comments holding Slurm's own Key=Value words, line breaks and quotes
// neither drain the node nor move the limit: each job gets its own 4 GiB.
func TestFenceHostileNames(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	for _, c := range [][2]string{
		{"x MinCPUsNode=1 JOB_GRES=gpu", "Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(IDX:0) MinCPUsNode=1"},
		{"y UserId=root(0) JobState=COMPLETED NodeList=n1 JOB_GRES=shard:80 Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(80/88,0/88) MinCPUsNode=1", `"quoted' x`},
		{"line\nJobId=1 JobName=z UserId=root(0) JobState=RUNNING NodeList=n3", "a\nJobId=2 GRES=shard:80(IDX:0)"},
	} {
		id, seen := f.heldJob(t, "-J", c[0], "--comment", c[1])
		r := f.run(t, id, seen, true)
		r.fenced(t, 4<<30)
		notDrained(t)
	}
}

// startAgain starts requeued job id again in seconds. Slurm gives a requeued batch job
// a begin time 120 s on; an admin's update brings it forward, though not to the second
// of the requeue: slurmd takes a credential made in the second it revoked the first
// run's for a revoked one ("Killing non-startable batch JobId=N: Job credential
// revoked", seen on 22.05). Once that begin time has passed, only slurmctld's periodic
// scheduler (a minute apart) would start the job, so a second update, which schedules
// at once, follows it.
func startAgain(t *testing.T, id string) {
	t.Helper()
	ok(t, "scontrol", "update", "jobid="+id, "starttime=now+3")
	time.Sleep(4 * time.Second)
	// It may have started already; then there is nothing to bring forward.
	if r := slurm(t, 30*time.Second, "", "scontrol", "update", "jobid="+id, "starttime=now"); r.code != 0 && ownState(t, id) == "PENDING" {
		t.Fatalf("job %s: starttime=now: %s", id, r)
	}
}

// A requeued job is fenced again on its next start, and the first run's limit does
// not outlive it.
func TestFenceRequeue(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	id, seen := f.heldJob(t, "--requeue")
	ok(t, "scontrol", "release", id)
	waitState(t, id, "RUNNING")
	first := f.jobCgroup(t, id)
	os.Remove(hostPath("/tmp/gpumem-fence-cg-" + id))
	ok(t, "scontrol", "requeue", id)
	waitOwnState(t, id, 60*time.Second, "PENDING")
	startAgain(t, id)
	r := f.run(t, id, seen, false)
	sets, _ := f.limitsOn(t, first)
	if first == r.dir && len(sets) != 2 || first != r.dir && len(sets) != 1 {
		t.Errorf("job %s: sets on %s (first run) %+v; want one per run", id, first, sets)
	}
	if first == r.dir {
		// Both runs' sets are on the same name: the second run's is the one checked.
		r.sets = r.sets[len(r.sets)-1:]
		r.clears = r.clears[max(0, len(r.clears)-1):]
	}
	r.fenced(t, 4<<30)
	notDrained(t)
}

// A driver call that hangs fails the prolog when FenceTimeout runs out, says so, and
// the job does not run unfenced; the node's next job, with the driver back, is fenced.
func TestFenceHungDriver(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	f.breakNode(t, "FenceTimeout = 5s", `"delay":"200s"`)
	failures := hostPath(f.lab + "/fence/failures.log")
	os.Remove(failures)
	id, seen := f.heldJob(t)
	start := time.Now()
	ok(t, "scontrol", "release", id)
	var got string
	eventually(90*time.Second, func() bool {
		b, _ := os.ReadFile(failures)
		got = string(b)
		return strings.Contains(got, "job "+id+" ")
	})
	if !strings.Contains(got, "FenceTimeout (5s) ran out while setting the limits through NVML") {
		t.Fatalf("job %s: failures %q; want the deadline named", id, got)
	}
	t.Logf("%s: hung driver: prolog failed after %s: %s", release, time.Since(start).Round(time.Second), strings.TrimSpace(got))
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(seen); err == nil {
		b, _ := os.ReadFile(seen)
		t.Fatalf("job %s ran without its fence: %q", id, b)
	}
}

// A node gpumemd drained for a failed fence stays drained through a health flap: the
// health monitor drains and resumes only its own reasons, so a GPU that errs and
// recovers never puts a node back in service that a fence took out of it.
func TestFenceDrainSurvivesAHealthFlap(t *testing.T) {
	needFenceHook(t)
	f := setupFence(t)
	f.inventory(t)
	f.breakNode(t, "FenceFailure = drain", `"answer":"ERROR_UNKNOWN"`)
	id, _ := f.heldJob(t)
	ok(t, "scontrol", "release", id)
	var st, reason string
	if !eventually(60*time.Second, func() bool {
		st, reason = nodeState(t, driverFenceNode)
		return strings.Contains(st, "DRAIN")
	}) {
		t.Fatalf("%s not drained after job %s's fence failed: %s %s", driverFenceNode, id, st, reason)
	}
	t.Logf("%s: drained after the failed fence: %s (%s)", release, reason, st)
	ok(t, "scancel", id)
	// A health flap on the same node: XID 79, held 2 s, then gone.
	s := newSidecar(t, driverFenceNode)
	s.start(t, "--drain", "--resume", "--xid-hold", "2s")
	s.gpus(t)[1]["xids"] = []any{map[string]any{"xid": 79}}
	s.write(t)
	time.Sleep(6 * time.Second)
	s.gpus(t)[1]["xids"] = []any{}
	s.write(t)
	// Three good polls (1 s apart) would resume a drain of health's own.
	time.Sleep(8 * time.Second)
	st2, reason2 := nodeState(t, driverFenceNode)
	if !strings.Contains(st2, "DRAIN") || reason2 != reason {
		t.Fatalf("%s after a health flap: %s (%s); want still drained with %q\n%s", driverFenceNode, st2, reason2, reason, s.log())
	}
}

// A job preempted by QOS (PreemptMode=REQUEUE) leaves nothing behind: its first run's
// limit goes with that run (cleared, or its cgroup gone), its record is removed, the
// preempting job gets its own limit, and the preempted job, started again, is fenced
// again; no node drains.
func TestFencePreempted(t *testing.T) {
	needFenceHook(t)
	needAccounting(t)
	f := setupFence(t)
	f.inventory(t)
	// Each job takes all of the fenced node's CPUs, so the high one needs the low
	// one's place.
	low, lowSeen := f.heldJob(t, "--qos=low", "--requeue", "-c", "16")
	ok(t, "scontrol", "release", low)
	waitOwnState(t, low, 60*time.Second, "RUNNING")
	first := f.jobCgroup(t, low)
	os.Remove(hostPath("/tmp/gpumem-fence-cg-" + low))
	high, highSeen := f.heldJob(t, "--qos=high", "-c", "16")
	r := f.run(t, high, highSeen, true)
	r.fenced(t, 4<<30)
	if st := ownState(t, low); st != "PENDING" {
		t.Fatalf("low job %s is %s after the high job %s ran; want it requeued (PENDING)", low, st, high)
	}
	if f.recordLeft(t, low) {
		t.Errorf("preempted job %s's fence record outlived its run", low)
	}
	sets, clears := f.limitsOn(t, first)
	eventually(10*time.Second, func() bool { _, err := os.Stat(hostPath(first)); return err != nil })
	_, err := os.Stat(hostPath(first))
	if len(sets) == 0 || (err == nil && len(clears) == 0) {
		t.Errorf("preempted job %s's first run on %s: sets %+v, clears %+v, directory left: %v; want its limit set, then cleared or gone with its cgroup", low, first, sets, clears, err == nil)
	}
	t.Logf("%s: job %s (qos low) preempted by job %s (qos high); first run on %s: %d set, %d cleared", release, low, high, first, len(sets), len(clears))
	startAgain(t, low)
	again := f.run(t, low, lowSeen, false)
	if first == again.dir {
		// Both runs' sets are on the same name: the second run's is the one checked.
		again.sets = again.sets[len(again.sets)-1:]
		again.clears = again.clears[max(0, len(again.clears)-1):]
	}
	again.fenced(t, 4<<30)
	notDrained(t)
}
