//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// The fault tests (docs/reliability.md): each breaks one part of the lab the way a
// machine fails, then checks that every job submitted either ran or was refused with a
// reason, that no GPU held more than its hardware has, and that the lab came back by
// itself. test/faults.sh runs them with the MIG apply kills and the rest of the matrix.

const shardMiB = 1024 // the lab's ShardUnit

// fakeCapacity is each lab GPU's memory in MiB as its fake NVML file has it (the
// hardware), by node and device file name (nvidiaN): not what gres.conf says, which a
// fault may have changed.
func fakeCapacity(t *testing.T) map[string]map[string]int64 {
	t.Helper()
	lab := "/var/lib/gpumem-lab/" + release
	files, err := filepath.Glob(hostPath(lab + "/nodes/*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fake node files in %s: %v", lab, err)
	}
	out := map[string]map[string]int64{}
	for _, f := range files {
		node := strings.TrimSuffix(filepath.Base(f), ".json")
		var inv struct {
			Nodes []struct {
				GPUs []struct {
					Minor     int   `json:"minor"`
					MemoryMiB int64 `json:"memory_mib"`
				} `json:"gpus"`
			} `json:"nodes"`
		}
		b := ok(t, lab+"/bin/gpumemctl", "inventory", "--nvml", "fake:"+lab+"/nodes/"+node+".json")
		if err := json.Unmarshal([]byte(b), &inv); err != nil || len(inv.Nodes) != 1 {
			t.Fatalf("inventory of %s's fake file: %v\n%s", node, err, b)
		}
		out[node] = map[string]int64{}
		for _, g := range inv.Nodes[0].GPUs {
			out[node][fmt.Sprintf("nvidia%d", g.Minor)] = g.MemoryMiB
		}
	}
	return out
}

// checkFitsHardware fails when the running jobs' shards of one GPU add up to more memory
// than the GPU has, and, through checkNoOvercommit, when a GPU is given twice.
func checkFitsHardware(t *testing.T, g labGres, capMiB map[string]map[string]int64, jobs []job) {
	t.Helper()
	checkNoOvercommit(t, g, jobs)
	used := map[device]int64{}
	for _, j := range jobs {
		for _, u := range j.uses {
			if !u.whole {
				used[device{node: u.dev.node, file: u.dev.file}] += u.shards * shardMiB
			}
		}
	}
	for d, mib := range used {
		c, known := capMiB[d.node][filepath.Base(d.file)]
		if !known || mib > c {
			t.Errorf("%s %s: running jobs hold %d MiB of shards; the GPU has %d MiB", d.node, d.file, mib, c)
		}
	}
}

// labCmd runs a lab command from any goroutine (slurm() may stop the test, which only
// the test's own goroutine may do): its stdout, stderr and exit code, -1 if it did not run.
func labCmd(timeout time.Duration, args ...string) (string, string, int) {
	if root != "" {
		args = append([]string{"chroot", root}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out.String(), errOut.String() + fmt.Sprintf(" (still running after %v)", timeout), -1
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	case err != nil:
		return out.String(), err.Error(), -1
	}
	return out.String(), errOut.String(), 0
}

// kill9Ctld kills slurmctld with SIGKILL and waits until it is gone.
func kill9Ctld(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(hostPath("/var/lib/gpumem-lab/" + release + "/run/slurmctld.pid"))
	var pid int
	if _, serr := fmt.Sscan(string(b), &pid); err != nil || serr != nil || pid <= 1 {
		t.Fatalf("slurmctld's pid file: %q, %v", b, err)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); !strings.Contains(filepath.Base(exe), "slurmctld") {
		t.Fatalf("pid %d in slurmctld's pid file is %q", pid, exe)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !eventually(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatalf("slurmctld %d still runs 10s after SIGKILL", pid)
	}
}

// startCtld starts slurmctld as the lab does, keeping its saved state, and waits for it.
func startCtld(t *testing.T) {
	t.Helper()
	if r := slurm(t, 60*time.Second, "", "env", "GPUMEM_CONF=/etc/slurm/gpumem.conf", "slurmctld", "-i"); r.code != 0 {
		t.Fatalf("slurmctld did not start: %s", r)
	}
	if !eventually(60*time.Second, func() bool { return slurm(t, 30*time.Second, "", "scontrol", "ping").code == 0 }) {
		t.Fatal("slurmctld does not answer 60s after its restart")
	}
}

// backToNormal waits until no lab node is down, drained or not responding, then runs
// one gpu:mem job: the lab came back by itself.
func backToNormal(t *testing.T) {
	t.Helper()
	bad := ""
	if !eventually(120*time.Second, func() bool {
		bad = ""
		for _, l := range strings.Split(strings.TrimSpace(ok(t, "sinfo", "-h", "-N", "-o", "%N %T %E")), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && regexp.MustCompile(`down|drain|fail|unknown|\*$`).MatchString(f[1]) {
				bad += l + "; "
			}
		}
		return bad == ""
	}) {
		t.Errorf("lab nodes not back 120s after the fault: %s", bad)
	}
	if node, r := runsOn(t, "--gres=gpu:mem:10g"); r.code != 0 || node == "" {
		t.Errorf("after the fault a gpu:mem:10g job does not run: %s", r)
	}
}

// TestFaultCtldKill9DuringSubmitStorm kills slurmctld with SIGKILL in a storm of submits
// from four clients at once (gpu:mem jobs of mixed sizes and plain ones), then restarts
// it with its saved state. Every submit either got a job id or an error saying why;
// every job id given out was given once and is in sacct as COMPLETED; no GPU ever
// holds more than its memory; the nodes come back by themselves.
//
// slurmctld saves its job state a few seconds behind the ids it hands out: a job
// acknowledged within that window before a kill -9 is lost, and its id given out again
// after the restart (seen in the lab: docs/reliability.md). That is Slurm's, not
// gpumem's, and would make this test's outcome a matter of timing; so the storm pauses
// after its first third until slurmctld has saved every job acknowledged so far, and
// the kill comes then, with the clients submitting on into the outage and the restart.
func TestFaultCtldKill9DuringSubmitStorm(t *testing.T) {
	if os.Getenv("E2E_FAULT_MATRIX") == "" {
		// Six minutes a release, and its outcome still turns on where in a job's
		// launch the kill lands (docs/reliability.md): test/faults.sh runs it.
		t.Skip("the slurmctld kill -9 row runs from test/faults.sh (E2E_FAULT_MATRIX=1), not in every pass")
	}
	if _, err := os.Stat(hostPath("/var/lib/gpumem-lab/" + release + "/run/slurmdbd.pid")); err != nil {
		t.Skip("this lab runs without accounting (LAB_ACCOUNTING=0): sacct is how ended jobs are found")
	}
	clean(t)
	g := readGres(t)
	capMiB := fakeCapacity(t)
	stateFile := hostPath(strings.TrimSpace(regexp.MustCompile(`(?m)^StateSaveLocation\s*=\s*(\S+)`).FindStringSubmatch(ok(t, "scontrol", "show", "config"))[1]) + "/job_state")
	const workers, each = 4, 30
	sizes := []string{"5g", "10g", "20g", "40g", "8g", "15g"}
	type submit struct {
		args    string
		id, err string
		code    int
		took    time.Duration
	}
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		subs     []submit
		started  int
		inFlight int
		paused   bool
		wg       sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				mu.Lock()
				if started++; started == workers*each/3+1 {
					paused = true
				}
				for paused {
					cond.Wait()
				}
				inFlight++
				mu.Unlock()
				args := []string{"sbatch", "--parsable", "--output=/dev/null", "--gres=gpu:mem:" + sizes[(w+i)%len(sizes)], "--wrap", "sleep 2"}
				if i%5 == 4 {
					args = []string{"sbatch", "--parsable", "--output=/dev/null", "--wrap", "sleep 2"}
				}
				start := time.Now()
				out, errOut, code := labCmd(150*time.Second, args...)
				s := submit{args: strings.Join(args[3:len(args)-2], " "), code: code, err: strings.TrimSpace(errOut), took: time.Since(start)}
				if code == 0 {
					s.id, _, _ = strings.Cut(strings.TrimSpace(out), ";")
				}
				mu.Lock()
				subs = append(subs, s)
				inFlight--
				cond.Broadcast()
				mu.Unlock()
			}
		}(w)
	}
	// The first third acknowledged and nothing in flight: wait for slurmctld to save them.
	mu.Lock()
	for !paused || inFlight > 0 {
		cond.Wait()
	}
	acked := time.Now()
	mu.Unlock()
	if !eventually(60*time.Second, func() bool {
		fi, err := os.Stat(stateFile)
		return err == nil && fi.ModTime().After(acked)
	}) {
		t.Fatalf("slurmctld did not save its job state (%s) within 60s", stateFile)
	}
	kill9Ctld(t)
	t.Logf("slurmctld killed -9 after %d submits, its job state saved", len(subs))
	mu.Lock()
	paused = false
	cond.Broadcast()
	mu.Unlock()
	time.Sleep(3 * time.Second)
	startCtld(t)
	wg.Wait()

	var ids []string
	refused := 0
	for _, s := range subs {
		switch {
		case s.code == 0 && regexp.MustCompile(`^\d+$`).MatchString(s.id):
			ids = append(ids, s.id)
		case s.code != 0 && strings.Contains(s.err, "Requested node configuration is not available") && has(slurmrel.GresStateSaved):
			// 22.05 restores a node's shards without their GPUs until its slurmd
			// registers again, so a shard job looks never runnable for those seconds
			// (Slurm saves that state since 23.02, commit a54f9cff). Later releases
			// must not refuse a job that would run.
			t.Errorf("refused after the restart on %s (%s): %s", release, s.args, s.err)
		case s.code != 0 && strings.Contains(s.err, "error"):
			refused++
			t.Logf("refused (%s, after %v): %s", s.args, s.took.Round(time.Millisecond), s.err)
		default:
			t.Errorf("sbatch %s: neither a job id nor a reason: code %d, id %q, stderr %q", s.args, s.code, s.id, s.err)
		}
	}
	t.Logf("%d submits: %d job ids, %d refused with a reason", len(subs), len(ids), refused)

	// Every job id given out is a job slurmctld knows after its restart, and each ends.
	// Every job id given out once, and each job run to its end: squeue lists none of
	// them any more, and sacct (slurmctld keeps an ended job only MinJobAge, 5s in the
	// lab) has each as COMPLETED.
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("job id %s given out twice", id)
		}
		seen[id] = true
	}
	// A job that ended after the last state save is RUNNING again in the restarted
	// slurmctld, with nothing of it on its node. slurmctld ends (and requeues) it at a
	// registration of the node later than BatchStartTimeout + MessageTimeout after the
	// restart, and asks each node for one every 20 pings, SlurmdTimeout/3 apart
	// (ping_nodes.c, MAX_REG_FREQUENCY). A requeued job may start again only after the
	// requeue delay, a credential's lifetime (120 s; the lab sets no requeue_delay=):
	// the lab came back by itself within the sum and the jobs' own run.
	purge := 20*time.Duration(configSeconds(t, "SlurmdTimeout"))*time.Second/3 + 121*time.Second + 90*time.Second
	t.Logf("waiting up to %v for every job to end (slurmctld's purge of lost jobs included)", purge)
	allEnded := func() bool {
		checkFitsHardware(t, g, capMiB, running(t, g))
		for _, id := range strings.Fields(ok(t, "squeue", "-h", "-o", "%i")) {
			if seen[id] {
				return false
			}
		}
		return true
	}
	if !eventually(purge, allEnded) {
		queued := ok(t, "squeue", "-o", "%i %T %r %N")
		if nodes := slurmDuplicateDrains(t); len(nodes) > 0 {
			// Slurm's own outcome, which no plugin can change (docs/reliability.md):
			// counted, explained, and undone here as the admin has to.
			t.Logf("jobs still queued %v after the restart, behind Slurm's own drain of %v:\n%s", purge, nodes, queued)
			adminUndoesDuplicateDrain(t, nodes, seen)
			if !eventually(4*time.Minute, allEnded) {
				t.Errorf("jobs still queued 4m after the admin's resume and release:\n%s", ok(t, "squeue", "-o", "%i %T %r %N"))
			}
		} else {
			t.Errorf("jobs still queued %v after the restart:\n%s", purge, queued)
		}
	}
	if b, err := os.ReadFile(hostPath("/var/lib/gpumem-lab/" + release + "/log/slurmctld.log")); err == nil {
		t.Logf("jobs slurmctld found missing from their node after the restart: %d", bytes.Count(b, []byte("missing from batch node")))
	}
	states := map[string]string{}
	eventually(60*time.Second, func() bool {
		out, _, _ := labCmd(30*time.Second, "sacct", "-X", "-n", "-P", "-j", strings.Join(ids, ","), "-o", "JobID,State")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if id, st, found := strings.Cut(l, "|"); found {
				states[id] = st
			}
		}
		// slurmctld forgets a job before slurmdbd has its end: a job that
		// left squeue a moment ago can still be RUNNING in sacct.
		for id := range seen {
			if st, known := states[id]; !known || regexp.MustCompile(`^(PENDING|RUNNING|COMPLETING|REQUEUED|RESIZING|SUSPENDED)`).MatchString(st) {
				return false
			}
		}
		return true
	})
	for id := range seen {
		if st, known := states[id]; !known || st != "COMPLETED" {
			t.Errorf("job %s, given out before or after the kill, in sacct: %q", id, st)
		}
	}
	backToNormal(t)
	clean(t)
}

// slurmDuplicateDrains are the lab nodes slurmctld drained as "Duplicate jobid" because
// their slurmd refused to launch a job it had launched before ("already running, do
// not launch second copy"). A job slurmctld started after its last state save runs and
// ends on its node unseen by the restarted slurmctld, which never tells that slurmd the
// job is over: slurmd keeps it among the batch jobs it launched (launch_state.c) and
// refuses it when slurmctld starts it again, and slurmctld then drains the node
// (agent.c, DSH_DUP_JOBID). The kill -9 landing as a job starts decides it; seen on
// 26.05 (docs/reliability.md).
func slurmDuplicateDrains(t *testing.T) []string {
	t.Helper()
	ctld, _ := os.ReadFile(hostPath(labDir() + "/log/slurmctld.log"))
	var nodes []string
	for _, l := range strings.Split(strings.TrimSpace(ok(t, "sinfo", "-h", "-N", "-o", "%N|%E")), "\n") {
		node, reason, _ := strings.Cut(l, "|")
		if reason != "Duplicate jobid" || slices.Contains(nodes, node) {
			continue
		}
		d, _ := os.ReadFile(hostPath(labDir() + "/log/slurmd-" + node + ".log"))
		if bytes.Contains(ctld, []byte("Duplicate jobid on nodes "+node)) && bytes.Contains(d, []byte("already running, do not launch second copy")) {
			nodes = append(nodes, node)
		}
	}
	return nodes
}

// adminUndoesDuplicateDrain does what an admin does after Slurm's "Duplicate jobid"
// drain: restarts each node's slurmd (it forgets the jobs it launched; running jobs
// keep running under their slurmstepd), resumes the node, and releases the jobs of
// this test that Slurm held as "launch failed requeued held".
func adminUndoesDuplicateDrain(t *testing.T, nodes []string, seen map[string]bool) {
	t.Helper()
	for _, n := range nodes {
		b, _ := os.ReadFile(hostPath(labDir() + "/run/slurmd-" + n + ".pid"))
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 1 {
			t.Fatalf("%s's slurmd pid file: %q", n, b)
		}
		// SIGKILL after 15 s, as systemd's stop does (test/lab/mig-reload.sh: 24.11's
		// slurmd has hung in its shutdown).
		gone := func() bool { return syscall.Kill(pid, 0) != nil }
		syscall.Kill(pid, syscall.SIGTERM)
		if !eventually(15*time.Second, gone) {
			t.Logf("%s's slurmd %d still runs 15s after SIGTERM: SIGKILL", n, pid)
			syscall.Kill(pid, syscall.SIGKILL)
			if !eventually(5*time.Second, gone) {
				t.Fatalf("%s's slurmd %d still runs 5s after SIGKILL", n, pid)
			}
		}
		if r := slurm(t, 60*time.Second, "", "slurmd", "-N", n); r.code != 0 {
			t.Fatalf("%s's slurmd did not start again: %s", n, r)
		}
		ok(t, "scontrol", "update", "nodename="+n, "state=resume")
	}
	var held []string
	for _, l := range strings.Split(strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i|%r")), "\n") {
		if id, reason, _ := strings.Cut(l, "|"); seen[id] && strings.Contains(reason, "launch failed requeued held") {
			held = append(held, id)
		}
	}
	if len(held) > 0 {
		ok(t, "scontrol", "release", strings.Join(held, ","))
	}
	t.Logf("as the admin: restarted slurmd on %v, resumed it, released %d held jobs %v", nodes, len(held), held)
}

// TestFaultGresWriteKill9 kills gpumemd --once with SIGKILL at spread moments of its
// gres.conf and inventory write, 40 times, while n2's fake A100 changes between two
// layouts. After every kill, gres.conf and the inventory are each absent (never written
// yet) or one of the two complete versions gpumemd writes, never a part of one.
func TestFaultGresWriteKill9(t *testing.T) {
	m := newMIGLab(t)
	layouts := []string{"3g.20gb@0,3g.20gb@4", "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4"}
	node, err := os.ReadFile(hostPath(m.lab + "/nodes/" + migNode + ".json"))
	if err != nil {
		t.Fatal(err)
	}
	fake := m.dir + "/node.json"
	setLayout := func(l string) {
		var parts []string
		for _, p := range strings.Split(l, ",") {
			prof, start, _ := strings.Cut(p, "@")
			parts = append(parts, fmt.Sprintf(`{"profile": %q, "start": %s}`, prof, start))
		}
		re := regexp.MustCompile(`"instances":\s*\[[^\]]*\]`)
		if !re.Match(node) {
			t.Fatalf("no MIG instances to replace in n2's fake file:\n%s", node)
		}
		b := re.ReplaceAll(node, []byte(`"instances": [`+strings.Join(parts, ", ")+`]`))
		if err := os.WriteFile(hostPath(fake), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := func() []string {
		a := []string{m.lab + "/bin/gpumemd", "--once", "--config", m.lab + "/gpumemd.conf", "--nvml=fake:" + fake, "--node", migNode,
			"--dev-prefix", "/run/gpumem-lab/dev", "--write-gres", "--gres-conf", m.dir + "/gres.conf",
			"--write-inventory", "--inventory-dir", m.dir + "/inv"}
		if root != "" {
			a = append([]string{"chroot", root}, a...)
		}
		return a
	}
	os.MkdirAll(hostPath(m.dir+"/inv"), 0o755)
	// The two complete versions, from runs left to finish.
	want := map[string][2][]byte{}
	for i, l := range layouts {
		setLayout(l)
		if out, err := exec.Command(args()[0], args()[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("gpumemd --once: %v\n%s", err, out)
		}
		for _, f := range []string{"gres.conf", "inv/" + migNode + ".json"} {
			b, _ := os.ReadFile(hostPath(m.dir + "/" + f))
			v := want[f]
			v[i] = b
			want[f] = v
		}
	}
	if bytes.Equal(want["gres.conf"][0], want["gres.conf"][1]) {
		t.Fatalf("the two layouts give the same gres.conf:\n%s", want["gres.conf"][0])
	}
	os.Remove(hostPath(m.dir + "/gres.conf"))
	os.Remove(hostPath(m.dir + "/inv/" + migNode + ".json"))

	rng := rand.New(rand.NewSource(1))
	kills := 0
	for i := 0; i < 40; i++ {
		setLayout(layouts[i%2])
		cmd := exec.Command(args()[0], args()[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Intn(120)) * time.Millisecond)
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			kills++
		}
		cmd.Wait()
		for f, v := range want {
			b, err := os.ReadFile(hostPath(m.dir + "/" + f))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if !bytes.Equal(b, v[0]) && !bytes.Equal(b, v[1]) {
				t.Fatalf("after kill %d, %s is neither complete version:\n%s", i, f, b)
			}
		}
	}
	var left []string
	filepath.Walk(hostPath(m.dir), func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), ".tmp-") {
			left = append(left, strings.TrimPrefix(p, hostPath(m.dir)+"/"))
		}
		return nil
	})
	t.Logf("%d gpumemd --once runs killed -9 at 0-120 ms; gres.conf and inventory always whole; temporary files left by the kills: %d %v", kills, len(left), left)
}

// TestFaultDbdDownDuringAccounting stops slurmdbd (SIGKILL), runs gpu:mem jobs to their
// end meanwhile, and starts it again: the jobs ran as if nothing happened, and once
// slurmdbd is back every one of them is in sacct as COMPLETED, sent on by slurmctld.
func TestFaultDbdDownDuringAccounting(t *testing.T) {
	clean(t)
	g := readGres(t)
	capMiB := fakeCapacity(t)
	startDbd := killDbd(t)
	var ids []string
	for _, size := range []string{"10g", "20g", "5g", "40g", "15g", "8g"} {
		ids = append(ids, sbatch(t, "--gres=gpu:mem:"+size, "--wrap", "sleep 2"))
	}
	if !eventually(120*time.Second, func() bool {
		checkFitsHardware(t, g, capMiB, running(t, g))
		return strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i")) == ""
	}) {
		t.Fatalf("jobs still queued 120s into slurmdbd's outage:\n%s", ok(t, "squeue"))
	}
	for _, id := range ids {
		if st := regexp.MustCompile(`JobState=(\S+)`).FindStringSubmatch(ok(t, "scontrol", "show", "job", id, "-o")); st == nil || st[1] != "COMPLETED" {
			t.Errorf("job %s, run while slurmdbd was down: %v", id, st)
		}
	}
	startDbd()
	got := ""
	if !eventually(180*time.Second, func() bool {
		r := slurm(t, 30*time.Second, "", "sacct", "-X", "-n", "-P", "-j", strings.Join(ids, ","), "-o", "JobID,State")
		got = strings.TrimSpace(r.out)
		return r.code == 0 && strings.Count(got, "|COMPLETED") == len(ids)
	}) {
		t.Errorf("180s after slurmdbd's restart sacct has, for jobs %v:\n%s", ids, got)
	}
	backToNormal(t)
}

// killDbd kills the lab's slurmdbd (SIGKILL) and waits until it is gone, and returns
// what starts it again; a test that ends first starts it on its way out. It skips a lab
// without accounting.
func killDbd(t *testing.T) (start func()) {
	t.Helper()
	b, err := os.ReadFile(hostPath("/var/lib/gpumem-lab/" + release + "/run/slurmdbd.pid"))
	if err != nil {
		t.Skip("this lab runs without accounting (LAB_ACCOUNTING=0)")
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 1 {
		t.Fatalf("slurmdbd's pid file: %q", b)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			slurm(t, 60*time.Second, "", "slurmdbd")
		}
	})
	syscall.Kill(pid, syscall.SIGKILL)
	if !eventually(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatalf("slurmdbd %d still runs 10s after SIGKILL", pid)
	}
	return func() {
		t.Helper()
		if r := slurm(t, 60*time.Second, "", "slurmdbd"); r.code != 0 {
			t.Fatalf("slurmdbd did not start again: %s", r)
		}
		started = true
	}
}

// configSeconds reads a time setting of slurmctld's ("SlurmdTimeout = 300 sec").
func configSeconds(t *testing.T, key string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `\s*=\s*(\d+) sec`).FindStringSubmatch(ok(t, "scontrol", "show", "config"))
	if m == nil {
		t.Fatalf("scontrol show config has no %s in seconds", key)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
