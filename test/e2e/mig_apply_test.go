//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The MIG apply tests change n2, the lab's fake A100 in MIG mode, for real: its fake
// NVML file (where the fake GPU keeps its instances), gres.conf, the inventory and the
// lab's slurm.conf Gres= for n2 (through the lab's reload, test/lab/mig-reload.sh, as an
// admin's reload would), with slurmctld and slurmd restarted. Each test puts the lab
// back as it found it when it ends.

const migNode = "n2"

// migLab is what a MIG apply test needs of the lab, and what it must put back.
type migLab struct {
	lab, dir string            // the lab's directory; this test's, both as the lab sees them
	saved    map[string][]byte // lab path -> contents before the test
	gres     string            // n2's Gres= before the test
	reload   string            // gpumemd's --mig-reload; the lab's unless a test holds it
}

func newMIGLab(t *testing.T) *migLab {
	t.Helper()
	clean(t)
	m := &migLab{lab: "/var/lib/gpumem-lab/" + release, saved: map[string][]byte{}}
	m.dir = "/tmp/gpumem-e2e-migapply-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
	if err := os.MkdirAll(hostPath(m.dir+"/desired"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{m.lab + "/nodes/" + migNode + ".json", "/etc/slurm/gres.conf", "/etc/slurm/gpumem.d/" + migNode + ".json", "/etc/slurm/slurm.conf"} {
		b, err := os.ReadFile(hostPath(p))
		if err != nil {
			t.Fatal(err)
		}
		m.saved[p] = b
	}
	m.gres = nodeField(t, ok(t, "scontrol", "show", "node", migNode, "-o"), "Gres")
	m.reload = m.lab + "/bin/mig-reload"
	t.Cleanup(func() { m.restore(t); os.RemoveAll(hostPath(m.dir)) })
	return m
}

// restore puts n2's files back and, where its Gres= changed, has slurmctld and slurmd
// read them again through the same reload the apply used.
func (m *migLab) restore(t *testing.T) {
	clean(t)
	changed := false
	for p, b := range m.saved {
		if cur, _ := os.ReadFile(hostPath(p)); !bytes.Equal(cur, b) {
			changed = true
			if err := os.WriteFile(hostPath(p), b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	if changed {
		r := slurm(t, 90*time.Second, "", "env", "GPUMEM_NODE="+migNode, "GPUMEM_NODE_GRES="+m.gres, m.lab+"/bin/mig-reload")
		if r.code != 0 {
			t.Errorf("putting n2 back: %s", r)
		}
	}
	slurm(t, 30*time.Second, "", "scontrol", "update", "nodename="+migNode, "state=resume")
	if !eventually(30*time.Second, func() bool {
		line := slurm(t, 30*time.Second, "", "scontrol", "show", "node", migNode, "-o").out
		return strings.Contains(line, "State=IDLE ") && nodeField(t, line, "Gres") == m.gres
	}) {
		t.Errorf("n2 not back to IDLE with Gres=%s:\n%s", m.gres, ok(t, "scontrol", "show", "node", migNode))
	}
}

// nodeField is KEY's value in one line of `scontrol show node -o`.
func nodeField(t *testing.T, line, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?:^|\s)` + key + `=(\S*)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s= in %q", key, line)
	}
	return m[1]
}

// gpumemd is n2's sidecar, run where the lab's Slurm is (in its chroot for 24.11) with
// the lab's copy of the binary, writing the lab's gres.conf and inventory as gpumemd on
// a real node writes its own; kill stops it with SIGKILL.
type gpumemd struct {
	cmd    *exec.Cmd
	logf   string
	exited chan struct{}
}

func (m *migLab) startGpumemd(t *testing.T, name string) *gpumemd {
	t.Helper()
	args := []string{m.lab + "/bin/gpumemd", "--config", m.lab + "/gpumemd.conf", "--nvml=fake:" + m.lab + "/nodes/" + migNode + ".json",
		"--node", migNode, "--dev-prefix", "/run/gpumem-lab/dev", "--listen", "127.0.0.1:0", "--health-state", "", "--history-db", "",
		"--poll-interval", "1s", "--gres-interval", "1s", "--write-inventory", "--inventory-dir", "/etc/slurm/gpumem.d",
		"--write-gres", "--gres-conf", "/etc/slurm/gres.conf",
		"--mig-desired", m.dir + "/desired", "--mig-apply", "--mig-journal", m.dir + "/journal.json",
		"--mig-idle-timeout", "3m", "--mig-retry-after", "3s", "--mig-reload", m.reload}
	if root != "" {
		args = append([]string{"chroot", root}, args...)
	}
	g := &gpumemd{logf: hostPath(path.Join(m.dir, name+".log")), exited: make(chan struct{})}
	logf, err := os.Create(g.logf)
	if err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(args[0], args[1:]...)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.cmd.Wait(); logf.Close(); close(g.exited) }()
	t.Cleanup(func() {
		g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(15 * time.Second):
			g.cmd.Process.Kill()
		}
	})
	return g
}

func (g *gpumemd) log() string { b, _ := os.ReadFile(g.logf); return string(b) }

// kill9 is kill -9: nothing of gpumemd's runs on (a reload it started does).
func (g *gpumemd) kill9(t *testing.T) {
	t.Helper()
	g.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("gpumemd still runs 10s after SIGKILL")
	}
}

// journalStep is the last step the apply's journal records; "" when there is none.
func (m *migLab) journalStep() string {
	b, err := os.ReadFile(hostPath(m.dir + "/journal.json"))
	if err != nil {
		return ""
	}
	var j struct{ Step string }
	json.Unmarshal(b, &j)
	return j.Step
}

// desire writes n2's desired layout for GPU 0.
func (m *migLab) desire(t *testing.T, layout string) {
	t.Helper()
	b := fmt.Sprintf(`{"version": 1, "node": %q, "gpus": [{"index": 0, "model": "a100-40gb", "layout": %q}]}`, migNode, layout)
	if err := os.WriteFile(hostPath(m.dir+"/desired/"+migNode+".json"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeLayout is GPU 0's instances as n2's fake NVML file keeps them, e.g. 3g.20gb@0,3g.20gb@4.
func (m *migLab) fakeLayout(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(hostPath(m.lab + "/nodes/" + migNode + ".json"))
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		GPUs []struct {
			MIG struct {
				Instances []struct {
					Profile string
					Start   int
				}
			}
		}
	}
	if err := json.Unmarshal(b, &n); err != nil || len(n.GPUs) == 0 {
		t.Fatalf("n2's fake file: %v", err)
	}
	var parts []string
	for _, in := range n.GPUs[0].MIG.Instances {
		parts = append(parts, fmt.Sprintf("%s@%d", in.Profile, in.Start))
	}
	return strings.Join(parts, ",")
}

// gresTypes are the Types of n2's gpu lines in the lab's gres.conf, in order.
func gresTypes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(hostPath("/etc/slurm/gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "NodeName="+migNode+" Name=gpu ") {
			types = append(types, regexp.MustCompile(`Type=(\S+)`).FindStringSubmatch(l)[1])
		}
	}
	return types
}

// nodeWatch records every distinct State and Reason of n2, as `scontrol show node`
// prints them, until stopped: the apply's drain and resume as Slurm showed them.
type nodeWatch struct {
	mu     sync.Mutex
	seen   []string
	cancel context.CancelFunc
	done   chan struct{}
}

func watchNode(t *testing.T) *nodeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &nodeWatch{cancel: cancel, done: make(chan struct{})}
	args := []string{"scontrol", "show", "node", migNode}
	if root != "" {
		args = append([]string{"chroot", root}, args...)
	}
	go func() {
		defer close(w.done)
		last := ""
		for ctx.Err() == nil {
			out, _ := exec.CommandContext(ctx, args[0], args[1:]...).Output()
			var keep []string
			for _, l := range strings.Split(string(out), "\n") {
				l = strings.TrimSpace(l)
				if strings.HasPrefix(l, "State=") || strings.HasPrefix(l, "Reason=") || strings.HasPrefix(l, "Gres=") {
					keep = append(keep, regexp.MustCompile(` ThreadsPerCore.*| \[.*\]$`).ReplaceAllString(l, ""))
				}
			}
			if s := strings.Join(keep, " "); s != "" && s != last {
				last = s
				w.mu.Lock()
				w.seen = append(w.seen, time.Now().UTC().Format("15:04:05.0")+" "+s)
				w.mu.Unlock()
			}
			time.Sleep(150 * time.Millisecond)
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *nodeWatch) stop() { w.cancel(); <-w.done }

func (w *nodeWatch) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// TestMIGApplyFromQueue is the loop closed in the lab: jobs wait for a 3g.20gb while
// n2's only one is busy; `gpumemctl mig plan --from-queue` plans n2 to two of them;
// n2's gpumemd drains n2, waits for the running job, repartitions its fake A100,
// regenerates gres.conf, has slurm.conf's Gres= and slurmctld and slurmd updated by the
// reload, and resumes n2 once slurmctld counts the new instances. The waiting jobs then
// start on the two new instances.
func TestMIGApplyFromQueue(t *testing.T) {
	m := newMIGLab(t)
	if l := m.fakeLayout(t); l != "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4" {
		t.Fatalf("n2 starts with %s, not the lab's layout", l)
	}
	busy := sbatch(t, "-w", migNode, "--gres=gpu:3g.20gb:1", "--wrap", "sleep 15")
	waitState(t, busy, "RUNNING")
	var waiting []string
	for i := 0; i < 2; i++ {
		waiting = append(waiting, sbatch(t, "-w", migNode, "--gres=gpu:3g.20gb:1", "--wrap", "sleep 120"))
	}
	for _, id := range waiting {
		waitState(t, id, "PENDING")
	}
	r := slurm(t, 60*time.Second, "", m.lab+"/bin/gpumemctl", "mig", "plan", "--inventory", "/etc/slurm/gpumem.d",
		"--from-queue", "--keep-whole", "0", "--out", m.dir+"/desired")
	if r.code != 0 || !strings.Contains(r.out, "n2 gpu[0] (a100-40gb): 2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4 -> 3g.20gb@0,3g.20gb@4") ||
		!strings.Contains(r.out, "requests ≤ 20096 MiB (3g.20gb): 2 of 2 served, was 1") {
		t.Fatalf("mig plan --from-queue did not plan two 3g.20gb for the two waiting jobs:\n%s", r)
	}
	t.Logf("$ gpumemctl mig plan --inventory /etc/slurm/gpumem.d --from-queue --keep-whole 0 --out DIR\n%s", r.out)

	watch := watchNode(t)
	start := time.Now()
	g := m.startGpumemd(t, "gpumemd")
	if !eventually(120*time.Second, func() bool {
		for _, id := range waiting {
			if strings.TrimSpace(slurm(t, 30*time.Second, "", "squeue", "-h", "-j", id, "-o", "%T").out) != "RUNNING" {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the waiting jobs did not start within 120s\nn2 as seen:\n%s\ngpumemd:\n%s\n%s", strings.Join(watch.lines(), "\n"), g.log(), ok(t, "squeue"))
	}
	took := time.Since(start)
	watch.stop()
	seen := watch.lines()
	t.Logf("apply to both jobs running: %v\nn2 in scontrol show node while it ran:\n%s", took.Round(100*time.Millisecond), strings.Join(seen, "\n"))
	t.Logf("gpumemd:\n%s", migLines(g.log()))

	drained, resumedAfter := -1, -1
	for i, s := range seen {
		if drained < 0 && strings.Contains(s, "DRAIN") && strings.Contains(s, "Reason=gpumem: MIG layout change") {
			drained = i
		}
		if drained >= 0 && i > drained && !strings.Contains(s, "DRAIN") {
			resumedAfter = i
		}
	}
	if drained < 0 || resumedAfter < 0 {
		t.Errorf("scontrol show node did not show n2 drained with gpumem's reason and then resumed:\n%s", strings.Join(seen, "\n"))
	}
	if !strings.Contains(g.log(), "waiting: "+migNode+" is") {
		t.Errorf("the apply did not wait for the running job:\n%s", g.log())
	}
	// Each job holds one of the two new instances.
	idx := map[string]bool{}
	for _, id := range waiting {
		job := ok(t, "scontrol", "-d", "show", "job", id)
		mm := regexp.MustCompile(`GRES=gpu:3g\.20gb:1\(IDX:(\d+)\)`).FindStringSubmatch(job)
		if mm == nil {
			t.Fatalf("job %s does not hold a 3g.20gb instance:\n%s", id, job)
		}
		idx[mm[1]] = true
		t.Logf("job %s: %s", id, mm[0])
	}
	if len(idx) != 2 {
		t.Errorf("both jobs got the same instance: %v", idx)
	}
	if l := m.fakeLayout(t); l != "3g.20gb@0,3g.20gb@4" {
		t.Errorf("the fake A100 keeps %s", l)
	}
	if ty := gresTypes(t); strings.Join(ty, ",") != "3g.20gb,3g.20gb" {
		t.Errorf("gres.conf has n2's gpu Types %v, want two 3g.20gb", ty)
	}
	if gres := nodeField(t, ok(t, "scontrol", "show", "node", migNode, "-o"), "Gres"); gres != "gpu:3g.20gb:2" {
		t.Errorf("slurmctld reports n2 Gres=%s", gres)
	}
	if _, err := os.Stat(hostPath(m.dir + "/journal.json")); err == nil {
		t.Errorf("the journal outlived the apply")
	}
}

// holdReload makes gpumemd's reload one that waits, so a test knows the apply is at
// its "gres" step while the reload runs: it touches DIR/reload-started, then fails once
// DIR/reload-fail appears (and removes it) or runs the lab's reload once DIR/reload-go
// does.
func (m *migLab) holdReload(t *testing.T) {
	t.Helper()
	script := fmt.Sprintf(`#!/bin/sh
D=%s
touch $D/reload-started
while :; do
	if [ -e $D/reload-fail ]; then rm -f $D/reload-fail $D/reload-started; echo "reload failed (held by the test)" >&2; exit 1; fi
	[ -e $D/reload-go ] && exec %s/bin/mig-reload
	sleep 0.2
done
`, m.dir, m.lab)
	if err := os.WriteFile(hostPath(m.dir+"/hold-reload"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m.reload = m.dir + "/hold-reload"
	// A held reload left behind by a failed test ends with it.
	t.Cleanup(func() { os.WriteFile(hostPath(m.dir+"/reload-fail"), nil, 0o644); time.Sleep(time.Second) })
}

func (m *migLab) touch(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(hostPath(m.dir+"/"+name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *migLab) exists(name string) bool {
	_, err := os.Stat(hostPath(m.dir + "/" + name))
	return err == nil
}

// startAtReload starts n2's gpumemd on an apply to two 3g.20gb whose reload the test
// holds (holdReload), and waits until the apply is there, at its "gres" step.
func (m *migLab) startAtReload(t *testing.T, name string) *gpumemd {
	t.Helper()
	m.holdReload(t)
	m.desire(t, "3g.20gb@0,3g.20gb@4")
	g := m.startGpumemd(t, name)
	if !eventually(60*time.Second, func() bool { return m.journalStep() == "gres" && m.exists("reload-started") }) {
		t.Fatalf("the apply did not reach its reload (journal at %q):\n%s", m.journalStep(), g.log())
	}
	return g
}

// waitDone waits until gpumemd logs a finished apply; what names the failure.
func (g *gpumemd) waitDone(t *testing.T, d time.Duration, what string) {
	t.Helper()
	if !eventually(d, func() bool { return strings.Contains(g.log(), "mig: done") }) {
		t.Fatalf("%s:\n%s\n%s", what, g.log(), ok(t, "scontrol", "show", "node", migNode))
	}
}

// journalOwner is the command the journal names as its owner; "" when there is none.
func (m *migLab) journalOwner() string {
	b, _ := os.ReadFile(hostPath(m.dir + "/journal.json"))
	var j struct{ Owner struct{ Cmd string } }
	json.Unmarshal(b, &j)
	return j.Owner.Cmd
}

// checkApplied fails unless n2's fake A100, gres.conf and slurmctld's Gres= all hold
// two 3g.20gb and no journal is left; it returns n2's scontrol line.
func (m *migLab) checkApplied(t *testing.T) string {
	t.Helper()
	if m.journalStep() != "" {
		t.Errorf("journal left at %q", m.journalStep())
	}
	if l := m.fakeLayout(t); l != "3g.20gb@0,3g.20gb@4" {
		t.Errorf("the fake A100 holds %s, want 3g.20gb@0,3g.20gb@4", l)
	}
	if ty := gresTypes(t); strings.Join(ty, ",") != "3g.20gb,3g.20gb" {
		t.Errorf("gres.conf has n2's gpu Types %v, want two 3g.20gb", ty)
	}
	line := ok(t, "scontrol", "show", "node", migNode, "-o")
	if g := nodeField(t, line, "Gres"); g != "gpu:3g.20gb:2" {
		t.Errorf("slurmctld reports n2 Gres=%s, want gpu:3g.20gb:2", g)
	}
	return line
}

// TestMIGApplyKill9RollsBack kills n2's gpumemd while its apply waits for a job: the
// node is drained, no GPU changed yet. An admin then drains n2 with a reason of their
// own. The restarted gpumemd rolls the apply back (leaving the admin's drain), starts it
// again, and finishes once the job ends; n2 stays drained by the admin.
func TestMIGApplyKill9RollsBack(t *testing.T) {
	m := newMIGLab(t)
	job := sbatch(t, "-w", migNode, "--wrap", "sleep 300")
	waitState(t, job, "RUNNING")
	m.desire(t, "3g.20gb@0,3g.20gb@4")

	a := m.startGpumemd(t, "gpumemd-1")
	if !eventually(60*time.Second, func() bool { return m.journalStep() == "drained" && strings.Contains(a.log(), "waiting: ") }) {
		t.Fatalf("gpumemd did not drain n2 and wait for its job:\n%s", a.log())
	}
	a.kill9(t)
	line := ok(t, "scontrol", "show", "node", migNode, "-o")
	if !strings.Contains(line, "Reason=gpumem: MIG layout change") || m.journalStep() != "drained" {
		t.Fatalf("after kill -9 while waiting: journal at %q, node %s", m.journalStep(), line)
	}
	ok(t, "scontrol", "update", "nodename="+migNode, "state=drain", "reason=admin: hold for tests")

	b := m.startGpumemd(t, "gpumemd-2")
	if !eventually(60*time.Second, func() bool {
		l := b.log()
		return strings.Contains(l, `interrupted after step \"drained\"`) && strings.Contains(l, "rolled back: no GPU had changed") &&
			m.journalStep() == "drained" && strings.Contains(l, "waiting: ")
	}) {
		t.Fatalf("the second gpumemd did not roll back and start again:\n%s", b.log())
	}
	if l := m.fakeLayout(t); l != "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4" {
		t.Fatalf("rolled back, yet the fake A100 holds %s", l)
	}
	ok(t, "scancel", job)
	b.waitDone(t, 120*time.Second, "the second gpumemd did not finish the apply")
	t.Logf("gpumemd-1:\n%s\ngpumemd-2:\n%s", migLines(a.log()), migLines(b.log()))
	line = m.checkApplied(t)
	if !strings.Contains(line, "Reason=admin: hold for tests") || !strings.Contains(line, "DRAIN") {
		t.Errorf("n2 should stay drained by the admin:\n%s", line)
	}
}

// TestMIGApplyKill9RollsForward kills n2's gpumemd while its reload runs (held by the
// test, so the journal is at "gres": the GPU changed, gres.conf written). The restarted
// gpumemd finishes the apply from the journal and resumes n2, whose drain is gpumem's
// own; a job then runs on the new instances.
func TestMIGApplyKill9RollsForward(t *testing.T) {
	m := newMIGLab(t)
	a := m.startAtReload(t, "gpumemd-1")
	a.kill9(t)
	m.touch(t, "reload-fail") // the orphaned held reload ends without reloading
	if l := m.fakeLayout(t); l != "3g.20gb@0,3g.20gb@4" {
		t.Fatalf("killed at \"gres\", the fake A100 holds %s", l)
	}
	if line := ok(t, "scontrol", "show", "node", migNode, "-o"); !strings.Contains(line, "Reason=gpumem: MIG layout change") {
		t.Fatalf("killed at \"gres\", n2 is not drained by gpumem:\n%s", line)
	}

	m.reload = m.lab + "/bin/mig-reload"
	b := m.startGpumemd(t, "gpumemd-2")
	b.waitDone(t, 120*time.Second, "the second gpumemd did not finish the apply")
	t.Logf("gpumemd-1:\n%s\ngpumemd-2:\n%s", migLines(a.log()), migLines(b.log()))
	if !strings.Contains(b.log(), `interrupted after step \"gres\"`) || !strings.Contains(b.log(), "resumed "+migNode) {
		t.Errorf("the second gpumemd did not finish from the journal and resume n2:\n%s", b.log())
	}
	if line := m.checkApplied(t); strings.Contains(line, "DRAIN") {
		t.Errorf("n2 was drained by gpumem only, yet stays drained:\n%s", line)
	}
	id := sbatch(t, "-w", migNode, "--gres=gpu:3g.20gb:2", "--wrap", "sleep 30")
	waitState(t, id, "RUNNING")
}

// TestMIGApplyOneAtATime runs `gpumemctl mig apply` on n2 while n2's gpumemd applies
// (waiting for a job): it is refused, naming gpumemd, and the running apply's journal
// and drain are untouched; that apply then finishes.
func TestMIGApplyOneAtATime(t *testing.T) {
	m := newMIGLab(t)
	job := sbatch(t, "-w", migNode, "--wrap", "sleep 300")
	waitState(t, job, "RUNNING")
	m.desire(t, "3g.20gb@0,3g.20gb@4")
	g := m.startGpumemd(t, "gpumemd")
	if !eventually(60*time.Second, func() bool { return m.journalStep() == "drained" && strings.Contains(g.log(), "waiting: ") }) {
		t.Fatalf("gpumemd did not drain n2 and wait for its job:\n%s", g.log())
	}
	r := slurm(t, 60*time.Second, "", m.lab+"/bin/gpumemctl", "mig", "apply", "--nvml", "fake:"+m.lab+"/nodes/"+migNode+".json",
		"--node", migNode, "--journal", m.dir+"/journal.json", "--idle-timeout", "5s", "--yes", "--layout", "0=7g.40gb@0")
	t.Logf("$ gpumemctl mig apply --node n2 --layout 0=7g.40gb@0 ... (while gpumemd applies)\n%s", r)
	if r.code == 0 || !strings.Contains(r.err, "another MIG apply runs on this node") || !strings.Contains(r.err, "(gpumemd)") {
		t.Errorf("a second apply while gpumemd's runs was not refused naming gpumemd:\n%s", r)
	}
	line := ok(t, "scontrol", "show", "node", migNode, "-o")
	if m.journalStep() != "drained" || m.journalOwner() != "gpumemd" || !strings.Contains(line, "Reason=gpumem: MIG layout change") {
		t.Errorf("the refused apply touched the running one: journal at %q owned by %q, node %s", m.journalStep(), m.journalOwner(), line)
	}
	ok(t, "scancel", job)
	g.waitDone(t, 120*time.Second, "gpumemd did not finish the apply")
	if line := m.checkApplied(t); strings.Contains(line, "DRAIN") {
		t.Errorf("n2 stays drained after the apply:\n%s", line)
	}
}

// TestMIGApplyFailureKeepsAdminDrain: while n2's apply reloads Slurm, an admin drains
// n2 with a reason of their own and the reload fails. The failure leaves the admin's
// reason as it is; gpumemd's retry finishes the apply and leaves n2 drained by the admin.
func TestMIGApplyFailureKeepsAdminDrain(t *testing.T) {
	m := newMIGLab(t)
	g := m.startAtReload(t, "gpumemd")
	ok(t, "scontrol", "update", "nodename="+migNode, "state=drain", "reason=admin: hold for tests")
	m.touch(t, "reload-fail")
	if !eventually(30*time.Second, func() bool { return strings.Contains(g.log(), "MIG apply failed") }) {
		t.Fatalf("the held reload's failure did not fail the apply:\n%s", g.log())
	}
	line := ok(t, "scontrol", "show", "node", migNode, "-o")
	if !strings.Contains(line, "Reason=admin: hold for tests") || m.journalStep() != "gres" {
		t.Errorf("after the failed reload: journal at %q, node %s; want the admin's reason kept", m.journalStep(), line)
	}
	m.touch(t, "reload-go") // gpumemd's retry (3 s on, --mig-retry-after) reloads for real
	g.waitDone(t, 150*time.Second, "gpumemd's retry did not finish the apply")
	t.Logf("gpumemd:\n%s", migLines(g.log()))
	if line := m.checkApplied(t); !strings.Contains(line, "Reason=admin: hold for tests") || !strings.Contains(line, "DRAIN") {
		t.Errorf("n2 should stay drained by the admin:\n%s", line)
	}
}

// migLines are gpumemd's MIG log lines, for the transcript.
func migLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "mig: ") || strings.Contains(l, "MIG") || strings.Contains(l, "gres.conf written") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
