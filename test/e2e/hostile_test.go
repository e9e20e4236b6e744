//go:build e2e

package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// labUser is the unprivileged user the hostile tests submit as: created (no home,
// uid 2001) on the host and, for 24.11, in the lab's chroot, whose slurmd resolves it.
const labUser = "gpumemlab"

func ensureLabUser(t *testing.T) {
	t.Helper()
	roots := []string{""}
	if root != "" {
		roots = append(roots, root)
	}
	for _, r := range roots {
		run := func(args ...string) error {
			if r != "" {
				args = append([]string{"chroot", r}, args...)
			}
			return exec.Command(args[0], args[1:]...).Run()
		}
		if run("id", "-u", labUser) == nil {
			continue
		}
		if out, err := exec.Command("sh", "-c", fmt.Sprintf("%s useradd -M -u 2001 -s /bin/sh %s", chrootPrefix(r), labUser)).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s%s: %v\n%s", r, labUser, err, out)
		}
	}
}

func chrootPrefix(r string) string {
	if r == "" {
		return ""
	}
	return "chroot " + r
}

// sbatchAs submits as the lab user, in the inference partition (n3's shared L4s).
func sbatchAs(t *testing.T, args ...string) string {
	t.Helper()
	r := slurm(t, 30*time.Second, "", append([]string{"runuser", "-u", labUser, "--", "sbatch", "-p", "inference", "--gres=gpu:mem:4g"}, args...)...)
	m := submittedRE.FindStringSubmatch(r.out)
	if r.code != 0 || m == nil {
		t.Fatalf("sbatch as %s %v: %s", labUser, args, r)
	}
	return m[1]
}

// runningAs waits until job id runs (squeue prints no free text, so the job's hostile
// name cannot fool the wait) and returns its one sleep process.
func runningAs(t *testing.T, id string) int {
	t.Helper()
	var st string
	if !eventually(20*time.Second, func() bool {
		st = strings.TrimSpace(ok(t, "squeue", "-h", "-j", id, "-o", "%T"))
		return st == "RUNNING"
	}) {
		t.Fatalf("job %s: %q after 20s", id, st)
	}
	return jobPIDs(t, id, "sleep")[0]
}

// outsider starts a process as the lab user outside any job, with env, the way a user
// logged into the node could.
func outsider(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("runuser", append([]string{"-u", labUser, "--", "env"}, append(env, "sleep", "300")...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// runuser forks the sleep; find it.
	var pid int
	eventually(5*time.Second, func() bool {
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(cmd.Process.Pid), "-x", "sleep").Output()
		pid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
		if pid == 0 {
			if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); strings.TrimSpace(string(c)) == "sleep" {
				pid = cmd.Process.Pid
			}
		}
		return pid > 0
	})
	if pid == 0 {
		t.Fatal("the outsider's sleep did not start")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return &exec.Cmd{Process: &os.Process{Pid: pid}}
}

// forgeCgroup moves pid into a cgroup whose path holds job_ID, as a user's own
// delegated tree could (user@UID.service/job_ID/step_0), on this host's cgroup v2
// hierarchy, mounting one for the test where none is mounted. It returns the process's
// cgroup line; a forgery it cannot make fails the test, so the check is never dropped.
func forgeCgroup(t *testing.T, pid int, job string) string {
	t.Helper()
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var v2 string
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[2] == "cgroup2" {
			v2 = f[1]
			break
		}
	}
	if v2 == "" {
		// The kernel's cgroup v2 hierarchy can be mounted again anywhere.
		v2 = t.TempDir()
		if err := syscall.Mount("none", v2, "cgroup2", 0, ""); err != nil {
			t.Fatalf("no cgroup v2 mounted and none could be (%v): the forger's cgroup cannot be made", err)
		}
		t.Cleanup(func() { syscall.Unmount(v2, syscall.MNT_DETACH) })
	}
	base := filepath.Join(v2, "gpumem-e2e.slice")
	dir := filepath.Join(base, "user@2001.service", "job_"+job, "step_0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("the forger's cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Back to the root cgroup, then the empty cgroups go, deepest first.
		os.WriteFile(filepath.Join(v2, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		for d := dir; d != v2; d = filepath.Dir(d) {
			os.Remove(d)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving the forger into %s: %v", dir, err)
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "0::") && strings.Contains(l, "/job_"+job+"/") {
			return l
		}
	}
	t.Fatalf("the forger %d is not in its job_%s cgroup: %s", pid, job, b)
	return ""
}

func fileHash(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func metricValue(m, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	if v := re.FindStringSubmatch(m); v != nil {
		f, _ := strconv.ParseFloat(v[1], 64)
		return f
	}
	return -1
}

// TestHostileUsers: an unprivileged user tries everything a user controls against the
// root sidecar on n3, at once:
//   - victim: a job named `x JobState=COMPLETED Nodes=n[ GRES=shard:80(80/80)` with a
//     comment holding a whole fake node detail, within its 4 GiB slice;
//   - readonly: a job over its slice whose stderr is a read-only descriptor on
//     /etc/slurm/slurm.conf;
//   - fifo: a job over its slice whose stderr is a FIFO nobody reads;
//   - forger: a process outside any job claiming SLURM_JOB_ID=victim,
//     SLURM_SHARDS_ON_NODE=80, in a cgroup path holding job_victim, using 30 GiB;
//   - liar: a process outside any job with SLURM_SHARDS_ON_NODE=lol.
//
// With warn and notify: the two over jobs are warned through Slurm; slurm.conf is not
// written; polling never stalls; the victim is read as running with its 4 shards and
// never warned; the outsiders count as no job's; n3 is not drained. With kill: the two
// over jobs die, the victim and both outsiders live.
func TestHostileUsers(t *testing.T) {
	clean(t)
	ensureLabUser(t)
	t.Cleanup(func() { ok(t, "scancel", "--quiet", "-u", labUser); clean(t) })
	outDir := "/tmp/gpumem-hostile-" + strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(hostPath(outDir), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(hostPath(outDir), 0o1777)
	t.Cleanup(func() { os.RemoveAll(hostPath(outDir)) })
	out := "--output=" + outDir + "/%j.out"

	victim := sbatchAs(t, "-J", "x JobState=COMPLETED Nodes=n[ GRES=shard:80(80/80)",
		"--comment", " Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:80(80/80)", out, "--wrap", "sleep 300")
	readonly := sbatchAs(t, "-J", "ro", out, "--wrap", "exec 2</etc/slurm/slurm.conf; exec sleep 300")
	fifo := sbatchAs(t, "-J", "fifo", out, "--wrap",
		"F="+outDir+"/fifo-$SLURM_JOB_ID; mkfifo $F; sh -c \"exec 3<$F\" & exec 2>$F; exec sleep 300")
	pids := map[string]int{victim: runningAs(t, victim), readonly: runningAs(t, readonly), fifo: runningAs(t, fifo)}
	forger := outsider(t, "SLURM_JOB_ID="+victim, "SLURM_JOBID="+victim, "SLURM_SHARDS_ON_NODE=80")
	t.Logf("forger %d in cgroup %s", forger.Process.Pid, forgeCgroup(t, forger.Process.Pid, victim))
	liar := outsider(t, "SLURM_JOB_ID="+readonly, "SLURM_SHARDS_ON_NODE=lol")
	confHash := fileHash(t, hostPath("/etc/slurm/slurm.conf"))

	s := newSidecar(t, "n3")
	procs := []any{
		map[string]any{"pid": pids[victim], "used_mib": 3 << 10},
		map[string]any{"pid": pids[readonly], "used_mib": 6 << 10},
		map[string]any{"pid": pids[fifo], "used_mib": 6 << 10},
		map[string]any{"pid": forger.Process.Pid, "used_mib": 12 << 10}, // within an L4's 22.5 GiB: a larger size is no size
		map[string]any{"pid": liar.Process.Pid, "used_mib": 10 << 10},
	}
	// Shards are compared over the node, so every process can sit on GPU 0.
	s.gpus(t)[0]["processes"] = procs
	s.write(t)

	alive := func(t *testing.T, what string, pid int) {
		t.Helper()
		if !alivePID(pid) {
			t.Errorf("%s (process %d) was killed\n%s", what, pid, s.log())
		}
	}
	// The sidecar runs with --drain (after one bad poll), so "n3 is not drained" says
	// that nothing the users did made it see a problem; a drain it made anyway is
	// lifted at the end, for the tests after this one.
	t.Cleanup(func() {
		if st, reason := nodeState(t, "n3"); strings.Contains(st, "DRAIN") && strings.HasPrefix(reason, "gpumem:") {
			ok(t, "scontrol", "update", "nodename=n3", "state=resume")
		}
	})
	notDrained := func(t *testing.T) {
		t.Helper()
		if st, reason := nodeState(t, "n3"); strings.Contains(st, "DRAIN") {
			t.Errorf("n3 drained: %s %s", st, reason)
		}
	}

	t.Run("warn", func(t *testing.T) {
		s.start(t, "--usage-policy", "warn", "--usage-notify", "--drain", "--drain-after", "1")
		var m string
		if !eventually(15*time.Second, func() bool {
			m = s.metrics(t)
			return metricValue(m, `gpumem_enforcement_actions_total{action="warn"}`) == 2
		}) {
			t.Fatalf("want 2 warnings (readonly, fifo) within 15s:\n%s\n%s", m, s.log())
		}
		polls := metricValue(m, "gpumem_sidecar_polls_total")
		time.Sleep(3 * time.Second)
		m = s.metrics(t)
		if after := metricValue(m, "gpumem_sidecar_polls_total"); after < polls+2 {
			t.Errorf("polls %v then %v over 3s at 1s polling: a job's stderr stalled the loop", polls, after)
		}
		if h := fileHash(t, hostPath("/etc/slurm/slurm.conf")); h != confHash {
			t.Errorf("slurm.conf changed while a job's stderr pointed at it")
		}
		for _, want := range []string{
			fmt.Sprintf(`gpumem_job_memory_allocated_bytes{jobid="%s",kind="shard"} %s`, victim, gibBytes(4<<10)),
			fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 0`, victim),
			fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 1`, readonly),
			fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 1`, fifo),
		} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %s\n%s", want, s.log())
			}
		}
		un := regexp.MustCompile(`gpumem_gpu_memory_unattributed_bytes\{[^}]*gpu="0"[^}]*\} (\S+)`).FindStringSubmatch(m)
		if un == nil || un[1] != gibBytes(22<<10) {
			t.Errorf("unattributed on GPU 0: want the outsiders' 22 GiB\n%s", grepLines(m, "unattributed"))
		}
		log := s.log()
		if strings.Contains(log, "job="+victim+" action=warn") {
			t.Errorf("the victim, within its slice, was warned:\n%s", log)
		}
		if b, _ := os.ReadFile(hostPath(outDir + "/" + readonly + ".out")); !strings.Contains(string(b), "gpumem: job "+readonly) {
			t.Errorf("job %s was not told through Slurm: its output %q", readonly, b)
		}
		alive(t, "victim", pids[victim])
		alive(t, "forger", forger.Process.Pid)
		alive(t, "liar", liar.Process.Pid)
		notDrained(t)
	})

	t.Run("kill", func(t *testing.T) {
		s.start(t, "--usage-policy", "kill", "--usage-grace", "2s", "--drain", "--drain-after", "1")
		if !eventually(15*time.Second, func() bool { return !alivePID(pids[readonly]) && !alivePID(pids[fifo]) }) {
			t.Fatalf("the over jobs' processes still run after 15s\n%s", s.log())
		}
		time.Sleep(3 * time.Second)
		alive(t, "victim", pids[victim])
		alive(t, "forger", forger.Process.Pid)
		alive(t, "liar", liar.Process.Pid)
		if st := strings.TrimSpace(ok(t, "squeue", "-h", "-j", victim, "-o", "%T")); st != "RUNNING" {
			t.Errorf("victim job %s: %q, want RUNNING", victim, st)
		}
		if h := fileHash(t, hostPath("/etc/slurm/slurm.conf")); h != confHash {
			t.Errorf("slurm.conf changed")
		}
		notDrained(t)
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
