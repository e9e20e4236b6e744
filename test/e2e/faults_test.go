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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
		for _, l := range strings.Split(strings.TrimSpace(ok(t, "sinfo", "-h", "-N", "-o", "%N %T")), "\n") {
			if f := strings.Fields(l); len(f) == 2 && regexp.MustCompile(`down|drain|fail|unknown|\*$`).MatchString(f[1]) {
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

// TestFaultCtldKill9DuringSubmitStorm kills slurmctld with SIGKILL a third of the way
// into a storm of submits from four clients at once (gpu:mem jobs of mixed sizes and
// plain ones), then restarts it with its saved state. Every submit either got a job id
// or an error saying why; every job id given out is known after the restart and ends
// COMPLETED; no GPU ever holds more than its memory; the nodes come back by themselves.
func TestFaultCtldKill9DuringSubmitStorm(t *testing.T) {
	clean(t)
	g := readGres(t)
	capMiB := fakeCapacity(t)
	const workers, each = 4, 30
	sizes := []string{"5g", "10g", "20g", "40g", "8g", "15g"}
	type submit struct {
		args           string
		id, err        string
		code           int
		took           time.Duration
		afterKillStart bool
	}
	var (
		mu      sync.Mutex
		subs    []submit
		done    int
		killing bool
		reached = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
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
				s.afterKillStart = killing
				subs = append(subs, s)
				if done++; done == workers*each/3 {
					close(reached)
				}
				mu.Unlock()
			}
		}(w)
	}
	select {
	case <-reached:
	case <-time.After(5 * time.Minute):
		t.Fatal("a third of the submits did not return within 5 minutes")
	}
	mu.Lock()
	killing = true
	mu.Unlock()
	kill9Ctld(t)
	t.Logf("slurmctld killed -9 after %d submits", workers*each/3)
	time.Sleep(3 * time.Second)
	startCtld(t)
	wg.Wait()

	var ids []string
	refused := 0
	for _, s := range subs {
		switch {
		case s.code == 0 && regexp.MustCompile(`^\d+$`).MatchString(s.id):
			ids = append(ids, s.id)
		case s.code != 0 && strings.Contains(s.err, "error"):
			refused++
			t.Logf("refused (%s, after %v): %s", s.args, s.took.Round(time.Millisecond), s.err)
		default:
			t.Errorf("sbatch %s: neither a job id nor a reason: code %d, id %q, stderr %q", s.args, s.code, s.id, s.err)
		}
	}
	t.Logf("%d submits: %d job ids, %d refused with a reason", len(subs), len(ids), refused)

	// Every job id given out is a job slurmctld knows after its restart, and each ends.
	lost := []string{}
	states := map[string]string{}
	if !eventually(240*time.Second, func() bool {
		checkFitsHardware(t, g, capMiB, running(t, g))
		lost, states = lost[:0], map[string]string{}
		for _, id := range ids {
			out, _, code := labCmd(30*time.Second, "scontrol", "show", "job", id, "-o")
			m := regexp.MustCompile(`JobState=(\S+)`).FindStringSubmatch(out)
			if code != 0 || m == nil {
				lost = append(lost, id)
				continue
			}
			states[id] = m[1]
		}
		for _, st := range states {
			if st == "PENDING" || st == "RUNNING" || st == "CONFIGURING" || st == "COMPLETING" {
				return false
			}
		}
		return true
	}) {
		t.Errorf("jobs still queued 240s after the restart: %v", states)
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d job ids given out are unknown after slurmctld's restart: %v", len(lost), len(ids), lost)
	}
	for id, st := range states {
		if st != "COMPLETED" {
			t.Errorf("job %s ended %s", id, st)
		}
	}
	backToNormal(t)
	clean(t)
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
	pidFile := hostPath("/var/lib/gpumem-lab/" + release + "/run/slurmdbd.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Skip("this lab runs without accounting (LAB_ACCOUNTING=0)")
	}
	clean(t)
	g := readGres(t)
	capMiB := fakeCapacity(t)
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
	if r := slurm(t, 60*time.Second, "", "slurmdbd"); r.code != 0 {
		t.Fatalf("slurmdbd did not start again: %s", r)
	}
	started = true
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
