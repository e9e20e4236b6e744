// Package fencehook is what gpumemd's Slurm hooks do for the driver fence of one job on
// one node: `gpumemd prolog` sets the job's limits, `gpumemd fence-check` lets a step
// run only once they hold, `gpumemd epilog` and gpumemd's start-up sweep clear them.
// The decisions (how long to wait for slurmctld, what Slurm's record of the job says it
// holds here, whether a step may run, which drain to set or lift) are pure functions;
// every call out to Slurm, NVML, the cgroup file system and the clock goes through Env,
// so cmd/gpumemd only wires the real ones in and tests stand in for them. Which limit a
// job gets on which GPU is package fence's.
package fencehook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/inventory"
)

// Env is what the hooks take from slurmd and the node. slurmd builds a prolog's
// environment itself (SLURM_JOB_ID, SLURMD_NODENAME, ...; a job's own variables reach it
// only with a SPANK_ prefix), so a user cannot choose Getenv's answers.
type Env struct {
	Getenv    func(string) string
	ReadFile  func(string) ([]byte, error)
	Lstat     fence.Stat
	OpenNVML  func(spec string) (fence.Lib, string, func(), error) // lib, backend kind, close
	Allocated func(ctx context.Context, scontrol, job, node string) ([]fence.Slice, error)
	Drain     func(scontrol, node, reason string) error
	// ResumeFence resumes node when its drain reason is the fence failure of job;
	// false when it was not (another reason, an admin's, or none).
	ResumeFence func(scontrol, node, job string) (bool, error)
	Now         func() time.Time
	Sleep       func(time.Duration)
	// Euid is the hook's effective uid (os.Geteuid); nil for root. Slurm runs the hooks
	// as root, but not always: see notRoot.
	Euid func() int
}

// notRoot says why a hook that must act as root cannot, or "" when it runs as root.
// Slurm 24.05 to 25.11 end X11 forwarding at the end of every extern step on another
// thread of the same slurmstepd, which sets the whole process to the job user's ids
// for the while (src/slurmd/slurmstepd/mgr.c, _shutdown_x11_forward); an Epilog
// (PrologFlags=RunInJob) that slurmstepd starts in that moment is made the user's
// for good (run_command sets the real ids to the effective ones before its exec).
// A lab on 24.11 met it in about one run in three of the fence tests. 26.05 shuts X11
// down in a child process, or not at all where no job asked for it.
func (env Env) notRoot() string {
	if env.Euid == nil {
		return ""
	}
	if uid := env.Euid(); uid != 0 {
		return fmt.Sprintf("run as uid %d, not root (Slurm before 26.05 can start a hook with the job user's ids while it ends the job's X11 forwarding)", uid)
	}
	return ""
}

// Job is what the prolog and the epilog share: the job, this node, its GPUs, and the
// settings of gpumem.conf the hooks follow.
type Job struct {
	Conf         config.Gpumemd
	ShardUnitMiB int64
	ID, Node     string
	Num          uint64
	GPUs         []inventory.GPU
}

// Load reads the job of a hook: gpumem.conf at path, the job and node slurmd names
// in getenv's variables, and this node's inventory. What it read before an error is
// kept, so that a hook can still tell whether the node promised a fence.
func Load(path string, getenv func(string) string) (Job, error) {
	var j Job
	var err error
	if j.Conf, err = config.LoadGpumemd(path); err != nil {
		return j, err
	}
	shared, _ := config.Load(path) // its reader keeps safe defaults for a bad key
	j.ShardUnitMiB = shared.ShardUnitMiB
	id, err := fence.ParseJobID(getenv("SLURM_JOB_ID"))
	if err != nil {
		return j, err
	}
	j.ID, j.Num = fmt.Sprint(id), id
	j.Node = getenv("SLURMD_NODENAME")
	if err := inventory.CheckNodeName(j.Node); err != nil {
		return j, fmt.Errorf("SLURMD_NODENAME: %w", err)
	}
	inv, err := inventory.LoadPath(filepath.Join(j.Conf.InventoryDir, j.Node+".json"))
	if err != nil {
		return j, fmt.Errorf("this node's inventory: %w", err)
	}
	for _, n := range inv.Nodes {
		if n.Name == j.Node {
			j.GPUs = n.GPUs
		}
	}
	return j, nil
}

// Prolog is `gpumemd prolog`, slurm.conf's Prolog with PrologFlags=Contain,RunInJob
// (or spank_gpumem.so's call in the extern step): slurmstepd runs it as root inside the
// job's extern step, once the job's cgroup exists and before any step of the job
// starts. For a shard job on GPUs this node said hold the driver fence, it sets each
// GPU's hard limit (the job's shards there x ShardUnit) on the job's cgroup, the
// directory Slurm put this very process in. Exit 0: fenced, or nothing to fence. Exit
// 1: a fence this node promised could not be set within FenceTimeout; Slurm then
// drains the node and requeues the job held, so the job never runs unfenced here
// (with FenceFailure=drain gpumemd first drains the node with its own reason). j and
// err are Load's.
func Prolog(j Job, err error, env Env, stderr io.Writer) int {
	if !fence.Promised(j.GPUs) {
		// Nothing here said it fences by driver (or no inventory says so): no Slurm or
		// NVML call for any job.
		if err != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: no fence:", err)
		}
		return 0
	}
	if why := env.notRoot(); err == nil && why != "" {
		err = fmt.Errorf("%s: no limit can be set", why)
	}
	if err != nil {
		return failed(j, env, stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.Conf.FenceTimeout)
	defer cancel()
	j.forget() // a record left from an earlier run of this job id is not this run's
	rec, err := j.set(ctx, env, stderr)
	if err != nil {
		return failed(j, env, stderr, err)
	}
	if err := j.record(rec); err != nil {
		// fence-check (SPANK) stops the job's steps without it; the limit stays on
		// the cgroup, which goes with the job.
		return failed(j, env, stderr, fmt.Errorf("the job's fence is set but not recorded: %w", err))
	}
	if rec.Cgroup != "" {
		fmt.Fprintf(stderr, "gpumemd prolog: job %s fenced by driver on %s (GPUs %v)\n", j.ID, rec.Cgroup, rec.GPUs)
	}
	if j.Conf.FenceFailure == "drain" {
		// This job's fence failed here before and drained the node; it holds now.
		if resumed, err := env.ResumeFence(j.Conf.Scontrol, j.Node, j.ID); err != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: the node's own fence drain not lifted:", err)
		} else if resumed {
			fmt.Fprintf(stderr, "gpumemd prolog: job %s's fence holds now: lifted the drain its failure set on %s\n", j.ID, j.Node)
		}
	}
	return 0
}

// set reads the job's allocation, decides and sets its limits, each part within ctx:
// a part that does not end in time (slurmctld, the cgroup file system, the driver) is
// named in the error, and the prolog fails rather than wait on it.
func (j Job) set(ctx context.Context, env Env, stderr io.Writer) (fence.Record, error) {
	rec := fence.Record{Job: j.ID}
	var slices []fence.Slice
	if err := within(ctx, j.Conf.FenceTimeout, "reading the job's allocation from slurmctld", func() (err error) {
		slices, err = AllocationOf(ctx, func(ctx context.Context) ([]fence.Slice, error) {
			return env.Allocated(ctx, j.Conf.Scontrol, j.ID, j.Node)
		}, env.Sleep)
		return err
	}); err != nil {
		return rec, fmt.Errorf("the job's allocation: %w", err)
	}
	d, err := fence.Plan(slices, j.GPUs, j.ShardUnitMiB)
	if err != nil {
		return rec, err
	}
	rec.Fence = d.Fence
	if d.Fence == "" {
		rec.Fence = fence.NoGPUs
	}
	if len(d.Limits) == 0 {
		return rec, nil
	}
	self, err := env.ReadFile("/proc/self/cgroup")
	if err != nil {
		return rec, err
	}
	dir, err := fence.FindJobCgroup(self, j.Conf.FenceCgroupRoot, j.Conf.FenceCgroupScope, j.Num)
	if err != nil {
		return rec, err
	}
	if err := within(ctx, j.Conf.FenceTimeout, "checking the job's cgroup "+dir, func() error {
		rec.CgroupID, err = fence.CgroupID(env.Lstat, dir)
		return err
	}); err != nil {
		return rec, err
	}
	if len(d.Spread) > 0 {
		// Slurm 22.05 did not say how the job's shards lie over these GPUs.
		fmt.Fprintf(stderr, "gpumemd prolog: job %s: Slurm lists GPUs %v for its shards without saying how many lie on each; each gets the most the job may hold there\n", j.ID, d.Spread)
	}
	err = within(ctx, j.Conf.FenceTimeout, "setting the limits through NVML", func() error {
		lib, _, closeLib, err := env.OpenNVML(j.Conf.NVML)
		if err != nil {
			return err
		}
		defer closeLib()
		return fence.Apply(lib, dir, d.Limits)
	})
	if err != nil {
		return rec, err
	}
	rec.Cgroup = dir
	for _, l := range d.Limits {
		rec.GPUs = append(rec.GPUs, l.GPU)
	}
	return rec, nil
}

// within runs f and waits for it until ctx ends; then it returns an error that says
// which part of the hook ran out of its deadline (f is left to the process's exit).
func within(ctx context.Context, limit time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("FenceTimeout (%s) ran out while %s", limit, what)
	}
}

// Step is what fence-check decides for a step from what it knows before asking Slurm.
type Step int

const (
	StepRuns      Step = iota // the prolog's record says it fenced (or nothing to), or nothing promised a fence
	StepFailed                // the record says this run's fence failed: refused
	StepUnchecked             // a fence was promised but the hook could not read its job: refused
	StepSetHere               // a fence was promised and no record says what came of it: set it here
)

// CheckStep decides a step: rec and recorded are ReadRecord's for its job, promised
// whether the node's inventory says it fences by driver, loadErr Load's error.
func CheckStep(rec fence.Record, recorded, promised bool, loadErr error) Step {
	switch {
	case recorded && rec.Failed != "":
		// Whatever the node promises now: this run's fence failed.
		return StepFailed
	case recorded, !promised:
		return StepRuns
	case loadErr != nil:
		return StepUnchecked
	}
	return StepSetHere
}

// Check is `gpumemd fence-check`, run by gpumem's SPANK plugin as root in each step's
// slurmstepd before its tasks (docs/gpumemd.md): on a node that said it fences by
// driver, a step runs only when the prolog recorded this job's outcome. Slurm only logs
// a failing extern-step hook, so this is what keeps a job whose limit could not be set
// from running unfenced there. Exit 0: the step may run; 1: it may not. j and err are
// Load's.
func Check(j Job, err error, env Env, stderr io.Writer) int {
	rec, ok := ReadRecord(j.Conf.FenceState, j.ID)
	switch CheckStep(rec, ok, fence.Promised(j.GPUs), err) {
	case StepRuns:
		return 0
	case StepFailed:
		fmt.Fprintf(stderr, "gpumem: job %s: its GPU memory fence could not be set on %s (%s), so this step does not run unfenced\n", j.ID, j.Node, rec.Failed)
		return 1
	case StepUnchecked:
		fmt.Fprintf(stderr, "gpumem: job %s: the GPU memory fence cannot be checked, so this step does not run: %v\n", j.ID, err)
		return 1
	}
	// No record for this run: the extern step's hook did not run for it (22.05 starts
	// no extern step again for a job requeued onto the same node, and the first run's
	// epilog removed that run's record) or failed. The step's slurmstepd is in the
	// job's cgroup too, so the fence is set from here, the same way, or the step fails.
	ctx, cancel := context.WithTimeout(context.Background(), j.Conf.FenceTimeout)
	defer cancel()
	rec, err = j.set(ctx, env, stderr)
	if err == nil {
		err = j.record(rec)
	}
	if err == nil {
		if rec.Cgroup != "" {
			fmt.Fprintf(stderr, "gpumemd fence-check: job %s fenced by driver on %s (GPUs %v): its extern step had not\n", j.ID, rec.Cgroup, rec.GPUs)
		}
		return 0
	}
	fmt.Fprintf(stderr, "gpumem: job %s: %s fences GPU memory by driver, but this job's limit could not be set there (%v; PrologFlags=Contain and plugstack.conf's %s are needed; the prolog's failures are in %s), so this step does not run unfenced\n",
		j.ID, j.Node, err, fence.SpankPlugin, j.Conf.FenceFailures)
	return 1
}

// failed counts and logs a fence that failed, drains by policy, and fails the prolog
// so the job does not run here unfenced.
func failed(j Job, env Env, stderr io.Writer, err error) int {
	// The run's record says it failed, so that no step of it runs even if the node's
	// inventory stops promising the fence before the step's check reads it.
	if j.record(fence.Record{Job: j.ID, Fence: inventory.FenceDriver, Failed: fence.FailureReason(err)}) != nil {
		j.forget()
	}
	msg := fmt.Sprintf("job %s on %s: driver fence not set: %v", j.ID, j.Node, err)
	fmt.Fprintln(stderr, "gpumemd prolog:", msg)
	if j.Conf.FenceFailures != "" {
		if f, ferr := os.OpenFile(j.Conf.FenceFailures, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); ferr == nil {
			_, _ = f.WriteString(FailureLine(env.Now(), msg))
			f.Close()
		} else {
			fmt.Fprintln(stderr, "gpumemd prolog: cannot count the failure:", ferr)
		}
	}
	if j.Conf.FenceFailure == "drain" && j.Node != "" {
		if derr := env.Drain(j.Conf.Scontrol, j.Node, DrainReason(j.ID, err)); derr != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: not drained:", derr)
		}
	}
	return 1
}

// Epilog is `gpumemd epilog` (Epilog, with the same PrologFlags): it clears the limits
// the prolog recorded, on the very cgroup it set them on (same path and inode), soft
// limit zeroed first as NVML asks before a cgroup goes, so no reservation outlives the
// job. It always exits 0: a failing epilog would drain the node for a limit that
// gpumemd's sweep clears anyway (Sweep); what failed is logged. An epilog Slurm
// started without root (notRoot) can do nothing: the limit goes with the job's cgroup
// (gpumem sets no soft limit, which alone would outlive it), and the record waits for
// the sweep. j and err are Load's.
func Epilog(j Job, err error, env Env, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintln(stderr, "gpumemd epilog: nothing cleared:", err)
		return 0
	}
	if why := env.notRoot(); why != "" {
		fmt.Fprintf(stderr, "gpumemd epilog: job %s: %s: nothing cleared; gpumemd's sweep removes its record\n", j.ID, why)
		return 0
	}
	r, ok := ReadRecord(j.Conf.FenceState, j.ID)
	j.forget()
	if !ok || r.Cgroup == "" {
		return 0
	}
	if err := Clear(env, j.Conf.NVML, r); err != nil {
		fmt.Fprintf(stderr, "gpumemd epilog: job %s: %v\n", j.ID, err)
	}
	return 0
}
