package migapply

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

const twoA100 = `{"gpus": [
  {"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}},
  {"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}%s}]}`

var (
	before = map[int]string{0: "7g.40gb@0", 1: "7g.40gb@0"}
	after  = map[int]string{0: "3g.20gb@0,3g.20gb@4", 1: "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4"}
)

// rig is one node: a fake NVML whose state outlives the Appliers built on it (as a
// GPU's outlives a killed gpumemd), fake Slurm commands and a journal.
type rig struct {
	t       *testing.T
	src     *nvmlsrc.Source
	path    string // the fake node's file: what outlives a killed process
	slurm   *slurmtest.Slurm
	journal string
	regens  int
	reloads int
	clock   time.Time
	log     bytes.Buffer
}

func newRig(t *testing.T, gpu1Extra string) *rig {
	t.Helper()
	dir := t.TempDir()
	node := filepath.Join(dir, "node.json")
	if err := os.WriteFile(node, []byte(strings.Replace(twoA100, "%s", gpu1Extra, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := nvmlsrc.Open("fake:" + node)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, src: src, path: node, slurm: slurmtest.New(t, true), journal: filepath.Join(dir, "mig-journal.json"), clock: time.Unix(1e9, 0)}
	t.Cleanup(func() { r.src.Close() })
	return r
}

// restart drops the fake NVML and opens the node file again, as a gpumemd started
// after a kill -9 would: the layout it finds is what the file kept.
func (r *rig) restart() {
	r.t.Helper()
	r.src.Close()
	src, err := nvmlsrc.Open("fake:" + r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	r.src = src
}

func (r *rig) applier(crash func(string) bool) *Applier {
	return &Applier{
		Node: "n1", GPUs: NVML{r.src}, Journal: r.journal, Log: &r.log,
		Slurm:       slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: r.slurm.Scontrol, Timeout: 10 * time.Second}},
		Regenerate:  func() error { r.regens++; return nil },
		Reload:      func(string) error { r.reloads++; return nil },
		IdleTimeout: time.Minute, Poll: 10 * time.Second,
		Now: func() time.Time { return r.clock }, Sleep: func(d time.Duration) { r.clock = r.clock.Add(d) },
		crash: crash,
	}
}

func want(m map[int]string) map[int]mig.Layout {
	out := map[int]mig.Layout{}
	for g, s := range m {
		l, _ := mig.ParseLayout(s)
		out[g] = l
	}
	return out
}

// has fails unless every GPU holds the layout of m.
func (r *rig) has(m map[int]string, what string) {
	r.t.Helper()
	for g, s := range m {
		l, err := NVML{r.src}.Layout(g)
		w, _ := mig.ParseLayout(s)
		if err != nil || !mig.SameLayout(l, w) {
			r.t.Errorf("%s: GPU %d has %s (%v), want %s\n%s", what, g, l, err, s, r.log.String())
		}
	}
}

func (r *rig) node() slurmcli.Node {
	r.t.Helper()
	n, err := slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: r.slurm.Scontrol, Timeout: 10 * time.Second}}.Node("n1")
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func TestApply(t *testing.T) {
	r := newRig(t, "")
	a := r.applier(nil)
	if err := a.Apply(want(after)); err != nil {
		t.Fatalf("apply: %v\n%s", err, r.log.String())
	}
	r.has(after, "after apply")
	// New instances take the lowest ids free, as real NVML gives them (and so the
	// /dev/nvidia-caps files a real node has).
	gpus, err := discover.GPUs(r.src, discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for g, wantIDs := range map[int][]int{0: {0, 1}, 1: {0, 1, 2, 3}} {
		var ids []int
		for _, in := range gpus[g].Instances {
			ids = append(ids, in.GI)
		}
		sort.Ints(ids)
		if !reflect.DeepEqual(ids, wantIDs) {
			t.Errorf("GPU %d: instance ids %v, want %v", g, ids, wantIDs)
		}
	}
	if n := r.node(); n.Flag("DRAIN") || r.regens != 1 || r.reloads != 1 || a.Pending() {
		t.Errorf("after apply: node %s, %d gres.conf writes, %d reloads, journal left %v", n.State, r.regens, r.reloads, a.Pending())
	}
	calls := r.slurm.Calls()
	if !strings.Contains(calls, "state=drain reason="+drainreason.MIG) || !strings.Contains(calls, "state=resume") {
		t.Errorf("the node was not drained and resumed:\n%s", calls)
	}
	// Applying the current layout changes nothing and asks Slurm nothing.
	r.log.Reset()
	if err := a.Apply(want(after)); err != nil || !strings.Contains(r.log.String(), "nothing to do") || r.slurm.Calls() != calls || r.regens != 1 {
		t.Errorf("re-apply: %v\n%s", err, r.log.String())
	}
	if steps := a.Steps(nil); len(steps) != 1 || !strings.Contains(steps[0], "nothing to do") {
		t.Errorf("dry run of a no-op: %v", steps)
	}
}

// TestCrashAtEveryStep kills the apply right after each step it journals, then starts
// a new Applier on the same GPUs and journal: the change is finished or rolled back,
// the node is never left drained, and gres.conf follows the layout.
func TestCrashAtEveryStep(t *testing.T) {
	var steps []string
	clean := newRig(t, "")
	if err := clean.applier(func(s string) bool { steps = append(steps, s); return false }).Apply(want(after)); err != nil {
		t.Fatal(err)
	}
	wantSteps := "checked drained idle gpu 0 destroyed gpu 0 created gpu 1 destroyed gpu 1 created verified gres reloaded"
	if strings.Join(steps, " ") != wantSteps {
		t.Fatalf("steps: %q, want %q", strings.Join(steps, " "), wantSteps)
	}
	for i, step := range steps {
		r := newRig(t, "")
		err := r.applier(func(s string) bool { return s == step }).Apply(want(after))
		if !errors.Is(err, ErrCrashed) || !r.applier(nil).Pending() {
			t.Fatalf("crash at %q: %v", step, err)
		}
		if fi, err := os.Stat(r.journal); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("crash at %q: journal %v, %v; want a private file", step, fi.Mode(), err)
		}
		if !r.node().Flag("DRAIN") && i > 0 {
			t.Errorf("crash at %q: the node was not drained while applying", step)
		}
		r.restart()
		// What a GPU held at the kill is what a new process finds.
		switch step {
		case "gpu 0 destroyed":
			r.has(map[int]string{0: "", 1: before[1]}, "after a restart at "+step)
		case "gpu 0 created", "gpu 1 destroyed":
			r.has(map[int]string{0: after[0]}, "after a restart at "+step)
		}
		if err := r.applier(nil).Recover(); err != nil {
			t.Fatalf("recover after a crash at %q: %v\n%s", step, err, r.log.String())
		}
		rolledBack := step == "checked" || step == "drained"
		if rolledBack {
			r.has(before, "rolled back after "+step)
			if r.regens != 0 {
				t.Errorf("crash at %q: gres.conf rewritten though nothing changed", step)
			}
		} else {
			r.has(after, "finished after "+step)
			if r.regens == 0 && step != "reloaded" && step != "gres" {
				t.Errorf("crash at %q: gres.conf not regenerated", step)
			}
		}
		if n := r.node(); n.Flag("DRAIN") || r.applier(nil).Pending() {
			t.Errorf("crash at %q: after recovery the node is %s (%q), journal left %v\n%s", step, n.State, n.Reason, r.applier(nil).Pending(), r.log.String())
		}
	}
}

func TestBusyGPURefusedBeforeAnyChange(t *testing.T) {
	r := newRig(t, `, "processes": [{"pid": 4242, "used_mib": 100}]`)
	err := r.applier(nil).Apply(want(after))
	if err == nil || !strings.Contains(err.Error(), "GPU 1: GPU busy: processes [4242]") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("busy GPU 1: %v", err)
	}
	r.has(before, "busy GPU 1")
	if calls := r.slurm.Calls(); strings.Contains(calls, "update") || r.applier(nil).Pending() {
		t.Errorf("the node was touched before the refusal:\n%s", calls)
	}
}

func TestAdminDrainKept(t *testing.T) {
	r := newRig(t, "")
	r.slurm.SetNode("IDLE", "disk swap")
	if err := r.applier(nil).Apply(want(after)); err != nil {
		t.Fatal(err)
	}
	r.has(after, "on an admin-drained node")
	if n := r.node(); !n.Flag("DRAIN") || n.Reason != "disk swap" || strings.Contains(r.slurm.Calls(), "update") {
		t.Errorf("the admin's drain was touched: %s %q\n%s", n.State, n.Reason, r.slurm.Calls())
	}
}

func TestGiveUpWhenJobsStay(t *testing.T) {
	r := newRig(t, "")
	r.slurm.SetNode("MIXED", "")
	err := r.applier(nil).Apply(want(after))
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "n1 is MIXED+DRAIN") {
		t.Fatalf("jobs that stay: %v\n%s", err, r.log.String())
	}
	r.has(before, "gave up")
	if n := r.node(); n.Flag("DRAIN") || r.applier(nil).Pending() {
		t.Errorf("after giving up the node is %s (%q)", n.State, n.Reason)
	}
}

// TestWaitingSaidOncePerMinute: an apply that waits for jobs says why when it starts
// waiting and once a minute after, not at every poll.
func TestWaitingSaidOncePerMinute(t *testing.T) {
	r := newRig(t, "")
	r.slurm.SetNode("MIXED", "")
	a := r.applier(nil)
	a.IdleTimeout = 5 * time.Minute // 30 polls of 10 s
	if err := a.Apply(want(after)); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("jobs that stay: %v", err)
	}
	if n := strings.Count(r.log.String(), "waiting: n1 is MIXED+DRAIN"); n != 5 {
		t.Errorf("said it waits %d times in 5 minutes of polls every 10 s; want 5 (once a minute)\n%s", n, r.log.String())
	}
}

func TestCorruptJournalRefused(t *testing.T) {
	r := newRig(t, "")
	os.WriteFile(r.journal, []byte(`{"version": 9, "node": "n1"}`), 0o600)
	if err := r.applier(nil).Apply(want(after)); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("a journal of another version: %v", err)
	}
	r.has(before, "journal refused")
}

// TestHealthDrainRefused: a node drained by gpumem for another reason than an apply's (a
// sick GPU, of this release's reasons or the one before's; a failed driver fence) is left
// to the admin: not repartitioned, its drain untouched, and the refusal says whose it is.
func TestHealthDrainRefused(t *testing.T) {
	for _, c := range []struct{ reason, who string }{
		{"gpumem: GPU 1 XID 79", "health monitor"},
		{drainreason.ForHealth([]string{"GPU 1 XID 79"}), "health monitor"},
		{drainreason.ForFence("42", "cannot write the limit"), "failed driver fence (job 42)"},
		{"gpumem: GPU memory fence failed for job 42", "failed driver fence (job 42)"},
	} {
		r := newRig(t, "")
		r.slurm.SetNode("IDLE", c.reason)
		if err := r.applier(nil).Apply(want(after)); err == nil || !strings.Contains(err.Error(), c.who) {
			t.Fatalf("a node drained with %q: %v; want refused, naming the %s", c.reason, err, c.who)
		}
		r.has(before, "gpumem's drain")
		if n := r.node(); n.Reason != c.reason || r.applier(nil).Pending() {
			t.Errorf("the drain %q was touched: %s %q", c.reason, n.State, n.Reason)
		}
	}
}

// TestReloadWaitsForSlurmctldGres: the reload gets the node's new Gres=, and the node is
// resumed only once slurmctld reports it; a reload that leaves slurmctld at the old
// count keeps the node drained with gpumem's failure reason and the journal for a retry.
func TestReloadWaitsForSlurmctldGres(t *testing.T) {
	const newGres = "gpu:3g.20gb:2,gpu:2g.10gb:1,gpu:1g.5gb:2"
	r := newRig(t, "")
	r.slurm.SetGres("gpu:7g.40gb:2")
	a := r.applier(nil)
	a.NodeGres = func() (string, error) { return newGres, nil }
	var got string
	polls := 0
	a.Reload = func(g string) error { got = g; return nil }
	a.Sleep = func(d time.Duration) {
		r.clock = r.clock.Add(d)
		if polls++; polls == 3 { // slurmctld takes the new slurm.conf a few seconds later
			r.slurm.SetGres("gpu:1g.5gb:2(S:0),gpu:2g.10gb:1,gpu:3g.20gb:2")
		}
	}
	if err := a.Apply(want(after)); err != nil {
		t.Fatalf("apply: %v\n%s", err, r.log.String())
	}
	if got != newGres || !strings.Contains(r.log.String(), "slurmctld reports n1 Gres="+newGres) {
		t.Errorf("reload got Gres %q\n%s", got, r.log.String())
	}
	if n := r.node(); n.Flag("DRAIN") || a.Pending() {
		t.Errorf("after the reload the node is %s (%q)", n.State, n.Reason)
	}

	r = newRig(t, "")
	r.slurm.SetGres("gpu:7g.40gb:2")
	a = r.applier(nil)
	a.NodeGres = func() (string, error) { return newGres, nil }
	err := a.Apply(want(after))
	if err == nil || !strings.Contains(err.Error(), "slurmctld still reports Gres=gpu:7g.40gb:2 for n1") ||
		!strings.Contains(err.Error(), "slurm.conf's NodeName=n1 needs that Gres=") {
		t.Fatalf("a reload slurmctld ignored: %v", err)
	}
	if n := r.node(); !n.Flag("DRAIN") || n.Reason != drainreason.MIG+": failed, see gpumemd log" || !a.Pending() {
		t.Errorf("after a failed reload the node is %s (%q), journal %v", n.State, n.Reason, a.Pending())
	}
	if steps := strings.Join(a.Steps([]GPUChange{{Index: 0}}), "\n"); !strings.Contains(steps, "wait until slurmctld reports n1's new Gres=") {
		t.Errorf("dry run lacks the Gres wait:\n%s", steps)
	}
}
