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
		"--mig-idle-timeout", "3m", "--mig-reload", m.lab + "/bin/mig-reload"}
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

// TestMIGApplyKill9Recovers kills n2's gpumemd twice in the middle of an apply: while it
// waits for a job (the node drained, no GPU changed yet) and while Slurm is told of
// the new layout (the GPU changed, gres.conf written). Between the two an admin drains
// n2 with a reason of their own. Each restarted gpumemd picks the apply up from its
// journal: the first rolls back and starts again, keeping the admin's drain; the second
// finishes. n2 ends with the layout, gres.conf and Gres= agreeing, still drained by the
// admin.
func TestMIGApplyKill9Recovers(t *testing.T) {
	m := newMIGLab(t)
	target := "3g.20gb@0,3g.20gb@4"
	job := sbatch(t, "-w", migNode, "--wrap", "sleep 300")
	waitState(t, job, "RUNNING")
	m.desire(t, target)

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
		return strings.Contains(b.log(), `interrupted after step \"drained\"`) && m.journalStep() == "drained" && strings.Contains(b.log(), "waiting: ")
	}) {
		t.Fatalf("the second gpumemd did not take over the apply:\n%s", b.log())
	}
	ok(t, "scancel", job)
	step := ""
	if !eventually(90*time.Second, func() bool {
		step = m.journalStep()
		return step == "gres" || step == "reloaded"
	}) {
		t.Fatalf("the apply never reached the reload (journal at %q):\n%s", step, b.log())
	}
	b.kill9(t)
	if l := m.fakeLayout(t); l != target {
		t.Fatalf("killed at %q, the fake A100 holds %s, want %s", step, l, target)
	}
	t.Logf("killed gpumemd at journal step %q", step)

	c := m.startGpumemd(t, "gpumemd-3")
	if !eventually(90*time.Second, func() bool { return strings.Contains(c.log(), "mig: done") }) {
		t.Fatalf("the third gpumemd did not finish the apply:\n%s\n%s", c.log(), ok(t, "scontrol", "show", "node", migNode))
	}
	t.Logf("gpumemd-1:\n%s\ngpumemd-2:\n%s\ngpumemd-3:\n%s", migLines(a.log()), migLines(b.log()), migLines(c.log()))
	if !strings.Contains(c.log(), "interrupted after step") {
		t.Errorf("the third gpumemd did not start from the journal:\n%s", c.log())
	}
	if m.journalStep() != "" {
		t.Errorf("journal left at %q", m.journalStep())
	}
	if l := m.fakeLayout(t); l != target {
		t.Errorf("the fake A100 holds %s, want %s", l, target)
	}
	if ty := gresTypes(t); strings.Join(ty, ",") != "3g.20gb,3g.20gb" {
		t.Errorf("gres.conf has n2's gpu Types %v, want two 3g.20gb", ty)
	}
	line = ok(t, "scontrol", "show", "node", migNode, "-o")
	if nodeField(t, line, "Gres") != "gpu:3g.20gb:2" || !strings.Contains(line, "Reason=admin: hold for tests") || !strings.Contains(line, "DRAIN") {
		t.Errorf("n2 should count two 3g.20gb and stay drained by the admin:\n%s", line)
	}
	// The admin resumes n2; a job then runs on the new layout.
	ok(t, "scontrol", "update", "nodename="+migNode, "state=resume")
	id := sbatch(t, "-w", migNode, "--gres=gpu:3g.20gb:2", "--wrap", "sleep 30")
	waitState(t, id, "RUNNING")
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
