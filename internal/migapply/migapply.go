// Package migapply changes one node's MIG layout without losing a job: it checks every
// GPU concerned first, drains the node in Slurm (an admin's drain stays untouched),
// waits until no job holds it, repartitions, verifies, regenerates gres.conf, makes
// Slurm read it and resumes. Each step is journaled, so a gpumemd killed at any point
// finishes or rolls back the change when it starts again. One apply runs at a time per
// node: it holds a lock beside the journal for its whole run, and the journal names it.
//
// The files, one concern each: migapply.go is the apply's state machine (Plan, Apply,
// Recover, and each step's way forward or back), journal.go the journal's format and
// its reading and writing, owner.go the lock and the apply that holds it, reason.go what
// each drain reason means to an apply, dryrun.go the steps --dry-run prints, nvml.go
// the node's GPUs through NVML, and retry.go the wait before a failed apply is retried.
package migapply

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// GPUs is the node's MIG hardware (NVML in production, its fake in tests).
type GPUs interface {
	Layout(gpu int) (mig.Layout, error)
	// Check tells, changing nothing, whether gpu can take want now: MIG mode on, no
	// process, profiles and placements the GPU offers.
	Check(gpu int, want mig.Layout) error
	Destroy(gpu int, want mig.Layout) error // every instance
	Create(gpu int, want mig.Layout) error  // want's instances on an empty GPU
}

// Slurm drains, resumes and reads this node (slurmcli.ScontrolNode).
type Slurm = slurmcli.NodeControl

// Applier applies a desired layout on its node.
type Applier struct {
	Node    string
	GPUs    GPUs
	Slurm   Slurm  // nil: the node is not in Slurm, nothing is drained or resumed
	Journal string // the journal file; its directory must exist
	// Regenerate runs the gres.conf pipeline on the new layout.
	Regenerate func() error
	// NodeGres, when set, is the node's new slurm.conf Gres= value, read once gres.conf
	// is regenerated: Reload gets it, and the apply then waits until slurmctld reports
	// it for the node, since a job can only be placed on instances slurmctld counts.
	NodeGres func() (string, error)
	// Reload makes slurmd and slurmctld read the new GRES: slurmctld takes a node's new
	// count of File-backed GRES only from slurm.conf at start (a restart on 22.05,
	// scontrol reconfigure from 23.11 on), slurmd reads gres.conf at start.
	Reload        func(nodeGres string) error
	ReloadTimeout time.Duration // how long slurmctld may take to report the new Gres=; 0: 2 minutes
	IdleTimeout   time.Duration // how long to wait for the node's jobs; 0: 10 minutes
	Poll          time.Duration // between two looks at the node; 0: 5 seconds
	Log           io.Writer     // one line per step; nil: none
	Sleep         func(time.Duration)
	Now           func() time.Time
	Cmd           string // what runs the apply, named to a second one it refuses; "": the program's name
	owner         Owner  // the apply holding the lock now
	// crash, in tests, stops the apply right after a step is journaled, as kill -9 would.
	crash func(step string) bool
}

// Steps, in order. Up to stepDrained nothing has changed on a GPU, so a restart rolls
// back; from stepIdle on the node is drained and idle, so a restart rolls forward.
const (
	stepChecked  = "checked"
	stepDrained  = "drained"
	stepIdle     = "idle"
	stepGPU      = "gpu"      // "gpu N destroyed" / "gpu N created"
	stepVerified = "verified" // NVML reads back the desired layout
	stepGres     = "gres"     // gres.conf regenerated
	stepReloaded = "reloaded" // Slurm told
)

// ErrCrashed is what a crash injected in a test returns.
var ErrCrashed = errors.New("migapply: crash injected")

// ErrGaveUp means the node's jobs did not end within IdleTimeout; the node was resumed
// (if this apply drained it) and nothing changed.
var ErrGaveUp = errors.New("gave up")

// Plan returns the GPUs of want whose layout differs from what they have, checked: a
// GPU it cannot read or a layout NVML would refuse fails the whole plan.
func (a *Applier) Plan(want map[int]mig.Layout) ([]GPUChange, error) {
	idx := make([]int, 0, len(want))
	for g := range want {
		idx = append(idx, g)
	}
	sort.Ints(idx)
	var out []GPUChange
	for _, g := range idx {
		cur, err := a.GPUs.Layout(g)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g, err)
		}
		if mig.SameLayout(cur, want[g]) {
			continue
		}
		out = append(out, GPUChange{Index: g, From: cur.String(), To: want[g].String()})
	}
	return out, nil
}

// Apply brings the node to want. It first finishes or rolls back an apply a crash left
// behind. Nothing changes when every GPU already has its desired layout. While another
// apply runs on the node it returns ErrBusy, naming it, and changes nothing.
func (a *Applier) Apply(want map[int]mig.Layout) error {
	if !a.Pending() {
		// Nothing to do is said without the lock, so it needs no writable journal directory.
		if changes, err := a.Plan(want); err == nil && len(changes) == 0 {
			a.logf("nothing to do: every GPU already has its desired layout")
			return nil
		}
	}
	release, err := a.lock()
	if err != nil {
		return err
	}
	defer release()
	if err := a.recover(); err != nil {
		return err
	}
	changes, err := a.Plan(want)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		a.logf("nothing to do: every GPU already has its desired layout")
		return nil
	}
	// 1. Check every GPU concerned before changing anything.
	for _, c := range changes {
		if err := a.GPUs.Check(c.Index, want[c.Index]); err != nil {
			return fmt.Errorf("GPU %d: %w; nothing was changed", c.Index, err)
		}
	}
	j := &journal{Version: JournalVersion, Node: a.Node, Owner: &a.owner, GPUs: changes, Started: a.now()}
	if err := a.step(j, stepChecked); err != nil {
		return err
	}
	// 2. Drain, unless someone already did.
	if a.Slurm != nil {
		n, err := a.Slurm.Node(a.Node)
		if err != nil {
			return a.rollBack(j, fmt.Errorf("read node %s: %w", a.Node, err))
		}
		switch {
		case ownDrain(n):
			j.Drained = true // left by an earlier apply that failed: this one resumes it
		case n.Flag("DRAIN") && drainreason.IsGpumem(n.Reason):
			// Another of gpumem's drains (its health monitor's for a sick GPU, a failed
			// driver fence's): the node waits for an admin, and is not repartitioned
			// under it.
			return a.rollBack(j, fmt.Errorf("%s is drained by %s (%q)", a.Node, drainer(n.Reason), n.Reason))
		case n.Flag("DRAIN") || n.Flag("DOWN"):
			a.logf("%s is already drained (%q): kept, and not resumed afterwards", a.Node, n.Reason)
		default:
			if err := a.Slurm.Drain(a.Node, drainreason.MIG); err != nil {
				return a.rollBack(j, fmt.Errorf("drain %s: %w", a.Node, err))
			}
			j.Drained = true
		}
	}
	if err := a.step(j, stepDrained); err != nil {
		return err
	}
	// 3. Wait until no job holds the node and no process the GPUs.
	if err := a.waitIdle(j, want); err != nil {
		return a.rollBack(j, err)
	}
	if err := a.step(j, stepIdle); err != nil {
		return err
	}
	return a.forward(j)
}

// waitIdle polls Slurm and NVML until the node runs no job and every GPU concerned can
// change, or IdleTimeout passes.
func (a *Applier) waitIdle(j *journal, want map[int]mig.Layout) error {
	deadline := a.now().Add(a.idleTimeout())
	// Said when the reason changes and once a minute while it stays: a poll a second for
	// the whole IdleTimeout would be hundreds of identical lines.
	said, saidAt := "", time.Time{}
	for {
		why := ""
		if a.Slurm != nil {
			n, err := a.Slurm.Node(a.Node)
			switch {
			case err != nil:
				why = err.Error()
			case !n.Flag("IDLE"):
				why = fmt.Sprintf("%s is %s", a.Node, n.State)
			}
		}
		if why == "" {
			for _, c := range j.GPUs {
				if err := a.GPUs.Check(c.Index, want[c.Index]); err != nil {
					why = fmt.Sprintf("GPU %d: %v", c.Index, err)
					break
				}
			}
		}
		if why == "" {
			return nil
		}
		if !a.now().Before(deadline) {
			return fmt.Errorf("%w after %s: %s", ErrGaveUp, a.idleTimeout(), why)
		}
		if now := a.now(); why != said || now.Sub(saidAt) >= time.Minute {
			a.logf("waiting: %s", why)
			said, saidAt = why, now
		}
		a.sleep(a.poll())
	}
}

// forward repartitions, verifies, regenerates gres.conf, tells Slurm and resumes: every
// part finds what is already done and does the rest, so a restart may run it again.
func (a *Applier) forward(j *journal) error {
	for _, c := range j.GPUs {
		want, _ := mig.ParseLayout(c.To) // written by Plan
		cur, err := a.GPUs.Layout(c.Index)
		if err != nil {
			return a.stuck(j, fmt.Errorf("GPU %d: %w", c.Index, err))
		}
		if mig.SameLayout(cur, want) {
			continue
		}
		if len(cur) > 0 {
			if err := a.GPUs.Destroy(c.Index, want); err != nil {
				return a.stuck(j, fmt.Errorf("GPU %d: destroy: %w", c.Index, err))
			}
		}
		if err := a.step(j, fmt.Sprintf("%s %d destroyed", stepGPU, c.Index)); err != nil {
			return err
		}
		if err := a.GPUs.Create(c.Index, want); err != nil {
			return a.stuck(j, fmt.Errorf("GPU %d: create %s: %w", c.Index, c.To, err))
		}
		if err := a.step(j, fmt.Sprintf("%s %d created", stepGPU, c.Index)); err != nil {
			return err
		}
	}
	for _, c := range j.GPUs {
		want, _ := mig.ParseLayout(c.To)
		cur, err := a.GPUs.Layout(c.Index)
		if err != nil || !mig.SameLayout(cur, want) {
			return a.stuck(j, fmt.Errorf("GPU %d: applied %s but NVML reports %s (%v)", c.Index, c.To, cur, err))
		}
	}
	if err := a.step(j, stepVerified); err != nil {
		return err
	}
	if a.Regenerate != nil {
		if err := a.Regenerate(); err != nil {
			return a.stuck(j, fmt.Errorf("regenerate gres.conf: %w", err))
		}
	}
	if err := a.step(j, stepGres); err != nil {
		return err
	}
	gres := ""
	if a.NodeGres != nil {
		var err error
		if gres, err = a.NodeGres(); err != nil {
			return a.stuck(j, fmt.Errorf("the node's new Gres=: %w", err))
		}
	}
	if a.Reload != nil {
		if err := a.Reload(gres); err != nil {
			return a.stuck(j, fmt.Errorf("make Slurm read gres.conf: %w", err))
		}
	}
	if err := a.waitGres(gres); err != nil {
		return a.stuck(j, err)
	}
	if err := a.step(j, stepReloaded); err != nil {
		return err
	}
	if err := a.resume(j); err != nil {
		return a.stuck(j, err)
	}
	a.logf("done: %s", summary(j))
	return a.clear()
}

// waitGres waits until slurmctld reports the node's new Gres=: until then it would
// place jobs on instances that are gone, or refuse the node's registration.
func (a *Applier) waitGres(gres string) error {
	if a.Slurm == nil || a.NodeGres == nil {
		return nil
	}
	deadline := a.now().Add(a.reloadTimeout())
	for {
		n, err := a.Slurm.Node(a.Node)
		if err == nil && slurmcli.SameGres(n.Gres, gres) {
			a.logf("slurmctld reports %s Gres=%s", a.Node, gres)
			return nil
		}
		if !a.now().Before(deadline) {
			have := n.Gres
			if err != nil {
				have = "unknown (" + err.Error() + ")"
			}
			return fmt.Errorf("slurmctld still reports Gres=%s for %s after %s, want Gres=%s: slurm.conf's NodeName=%s needs that Gres=, "+
				"then a slurmctld restart (22.05) or scontrol reconfigure (23.11 and later); see docs/mig.md", have, a.Node, a.reloadTimeout(), gres, a.Node)
		}
		a.sleep(min(a.poll(), time.Second))
	}
}

// Recover finishes or rolls back an apply a crash left behind; without a journal it
// does nothing. Like Apply, it takes the node's lock first.
func (a *Applier) Recover() error {
	release, err := a.lock()
	if err != nil {
		return err
	}
	defer release()
	return a.recover()
}

// recover is Recover under the lock. The journal's owner no longer holds the lock, yet
// a live process other than this one may still own it (a gpumemd whose apply failed and
// that retries it): that journal is its, not this apply's to take.
func (a *Applier) recover() error {
	j, err := a.read()
	if err != nil || j == nil {
		return err
	}
	if o := j.Owner; o != nil && o.PID != os.Getpid() && o.alive() {
		return fmt.Errorf("%w: the journal %s belongs to %s, which still runs and will retry it (its last step %q); nothing was changed",
			ErrBusy, a.Journal, o, j.Step)
	}
	if o := j.Owner; o != nil && o.PID != os.Getpid() {
		a.logf("taking over the apply of %s, which is gone", o)
	}
	j.Version, j.Owner = JournalVersion, &a.owner // what this apply writes from here on
	a.logf("found an apply interrupted after step %q: %s", j.Step, summary(j))
	switch j.Step {
	case stepChecked, stepDrained:
		// No GPU changed yet: undo the drain.
		return a.rollBack(j, nil)
	default:
		return a.forward(j)
	}
}

// rollBack resumes the node if this apply drained it and forgets the apply; cause, if
// any, is returned after.
func (a *Applier) rollBack(j *journal, cause error) error {
	if err := a.resume(j); err != nil {
		return errors.Join(cause, err)
	}
	if err := a.clear(); err != nil {
		return errors.Join(cause, err)
	}
	if cause != nil {
		a.logf("rolled back: %v", cause)
		return fmt.Errorf("%w; nothing was changed", cause)
	}
	a.logf("rolled back: no GPU had changed")
	return nil
}

// stuck keeps the journal and the node drained after a failure past the point of no
// return: the next start tries again, and Slurm shows why the node is out, with
// gpumem's failure reason only while the drain is still gpumem's own: an admin who
// drained (or resumed) the node since keeps their state.
func (a *Applier) stuck(j *journal, cause error) error {
	if a.Slurm != nil && j.Drained {
		n, err := a.Slurm.Node(a.Node)
		switch {
		case err != nil:
			cause = errors.Join(cause, fmt.Errorf("read node %s: %w", a.Node, err))
		case !ownDrain(n):
			a.logf("%s is no longer drained by gpumem (state %s, reason %q): left as it is", a.Node, n.State, n.Reason)
		case n.Reason != drainreason.MIGFailed:
			if err := a.Slurm.Drain(a.Node, drainreason.MIGFailed); err != nil {
				cause = errors.Join(cause, err)
			}
		}
	}
	a.logf("failed after step %q, node left drained for the next try: %v", j.Step, cause)
	return cause
}

// resume returns the node to service if this apply drained it and the drain is still
// its own (an admin may have drained it since, with a reason of theirs).
func (a *Applier) resume(j *journal) error {
	if a.Slurm == nil || !j.Drained {
		return nil
	}
	n, err := a.Slurm.Node(a.Node)
	if err != nil {
		return fmt.Errorf("read node %s: %w", a.Node, err)
	}
	switch {
	case ownDrain(n):
	case slurmGresDrain(n):
		a.logf("%s was drained by slurmctld for its GRES count during the apply (%q); the apply is done and gres.conf agrees: resumed as gpumem's own drain", a.Node, n.Reason)
	default:
		a.logf("%s is no longer drained by gpumem (state %s, reason %q): left as it is", a.Node, n.State, n.Reason)
		return nil
	}
	if err := a.Slurm.Resume(a.Node); err != nil {
		return fmt.Errorf("resume %s: %w", a.Node, err)
	}
	a.logf("resumed %s", a.Node)
	return nil
}

func (a *Applier) logf(format string, args ...any) {
	if a.Log != nil {
		fmt.Fprintf(a.Log, "mig: "+format+"\n", args...)
	}
}

func (a *Applier) idleTimeout() time.Duration {
	if a.IdleTimeout > 0 {
		return a.IdleTimeout
	}
	return 10 * time.Minute
}

func (a *Applier) reloadTimeout() time.Duration {
	if a.ReloadTimeout > 0 {
		return a.ReloadTimeout
	}
	return 2 * time.Minute
}

func (a *Applier) poll() time.Duration {
	if a.Poll > 0 {
		return a.Poll
	}
	return 5 * time.Second
}

func (a *Applier) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Applier) sleep(d time.Duration) {
	if a.Sleep != nil {
		a.Sleep(d)
		return
	}
	time.Sleep(d)
}
