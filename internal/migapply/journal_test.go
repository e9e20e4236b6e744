package migapply

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/mig"
)

// crashAt starts an apply of after on r and kills it right after step, as kill -9 would,
// leaving the journal and the GPUs as they were at that moment.
func crashAt(t *testing.T, r *rig, step string) {
	t.Helper()
	if err := r.applier(func(s string) bool { return s == step }).Apply(want(after)); !errors.Is(err, ErrCrashed) {
		t.Fatalf("crash at %q: %v", step, err)
	}
	r.restart()
}

// A journal is one node's: a gpumemd started for another node name (a copied state
// directory, a renamed host) must refuse it and change no GPU, not finish someone
// else's apply on these GPUs.
func TestJournalOfAnotherNodeRefused(t *testing.T) {
	r := newRig(t, "")
	crashAt(t, r, "gpu 0 destroyed")
	other := r.applier(nil)
	other.Node = "n2"
	err := other.Recover()
	if err == nil || !strings.Contains(err.Error(), "node n1's, not n2's") {
		t.Fatalf("recover as n2 of n1's journal: %v; want a refusal naming both nodes", err)
	}
	r.has(map[int]string{0: "", 1: before[1]}, "after a refused recovery")
	if !r.applier(nil).Pending() {
		t.Error("the refused journal was removed")
	}
}

// An admin who drains the node with a reason of their own while an interrupted apply
// waits for recovery keeps their drain: recovery finishes the layout but does not
// resume the node.
func TestRecoveryKeepsAdminRedrain(t *testing.T) {
	r := newRig(t, "")
	crashAt(t, r, "gpu 1 created")
	r.slurm.SetNode("IDLE", "bad fan")
	if err := r.applier(nil).Recover(); err != nil {
		t.Fatalf("recover: %v\n%s", err, r.log.String())
	}
	r.has(after, "finished after the admin's drain")
	if n := r.node(); !n.Flag("DRAIN") || n.Reason != "bad fan" {
		t.Errorf("the admin's drain was lifted or rewritten: %s %q\n%s", n.State, n.Reason, r.slurm.Calls())
	}
}

// lostCreate is the node's NVML where creating the instances of GPU 1 reports success
// but leaves the GPU empty (a driver that drops the request).
type lostCreate struct{ NVML }

func (l lostCreate) Create(gpu int, want mig.Layout) error {
	if gpu == 1 {
		return nil
	}
	return l.NVML.Create(gpu, want)
}

// An apply is verified against what NVML reports after it: a GPU that did not take its
// layout leaves the apply stuck (journal kept, node drained), gres.conf unwritten, never
// "done".
func TestLayoutNVMLDoesNotReportIsNotApplied(t *testing.T) {
	r := newRig(t, "")
	a := r.applier(nil)
	a.GPUs = lostCreate{NVML{r.src}}
	err := a.Apply(want(after))
	if err == nil || !strings.Contains(err.Error(), "GPU 1: applied") {
		t.Fatalf("apply with GPU 1's instances missing: %v; want it stuck on GPU 1\n%s", err, r.log.String())
	}
	if r.regens != 0 || !r.applier(nil).Pending() || !r.node().Flag("DRAIN") {
		t.Errorf("unverified apply: gres.conf rewritten %d times, journal kept %v, node %s", r.regens, r.applier(nil).Pending(), r.node().State)
	}
}

// A node rebooted after its GPUs changed: its slurmd came back on the new gres.conf
// before gpumemd recovered, and slurmctld replaced gpumem's drain reason with its own
// for the GRES count. That drain is the apply's doing, so recovery resumes the node once
// the apply is done; any other reason (an admin's, one that only looks alike) stays.
func TestRecoveryResumesSlurmsGresCountDrain(t *testing.T) {
	for reason, resumed := range map[string]bool{
		"gres/gpu count reported lower than configured (1 < 4)": true,
		"gres/gpu:3g.20gb count too low (0 < 2)":                true,
		"gres/gpu count too low (0 < 4)":                        true,
		"swap the gpu count too low board":                      false,
		"gres/gpu: admin checking the count":                    false,
	} {
		r := newRig(t, "")
		crashAt(t, r, "gpu 1 created")
		r.slurm.SetNode("IDLE", reason)
		if err := r.applier(nil).Recover(); err != nil {
			t.Fatalf("recover: %v\n%s", err, r.log.String())
		}
		r.has(after, "recovered")
		if n := r.node(); n.Flag("DRAIN") == resumed || (!resumed && n.Reason != reason) {
			t.Errorf("drained %q before recovery: now %s %q; want resumed %v\n%s", reason, n.State, n.Reason, resumed, r.slurm.Calls())
		}
	}
}
