package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// fenceEnv is what `gpumemd prolog` and `gpumemd epilog` take from slurmd: slurmd
// builds a prolog's environment itself (SLURM_JOB_ID, SLURMD_NODENAME, ...; a job's
// own variables reach it only with a SPANK_ prefix), so a user cannot choose them.
type fenceEnv struct {
	getenv    func(string) string
	readFile  func(string) ([]byte, error)
	lstat     fence.Stat
	openNVML  func(spec string) (fence.Lib, string, func(), error) // lib, backend kind, close
	allocated func(ctx context.Context, scontrol, job, node string) ([]fence.Slice, error)
	drain     func(scontrol, node, reason string) error
	// resumeFence resumes node when its drain reason is the fence failure of job;
	// false when it was not (another reason, an admin's, or none).
	resumeFence func(scontrol, node, job string) (bool, error)
	now         func() time.Time
	sleep       func(time.Duration)
}

func realFenceEnv() fenceEnv {
	if os.Getenv("PATH") == "" {
		// slurmd gives its prolog no PATH: scontrol is looked up in the system's own
		// directories only, never in one a user could write.
		os.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return fenceEnv{getenv: os.Getenv, readFile: os.ReadFile, lstat: os.Lstat, openNVML: openFenceNVML,
		allocated: slurmAllocation, drain: drainUnlessReason, resumeFence: resumeOwnFenceDrain, now: time.Now, sleep: time.Sleep}
}

func openFenceNVML(spec string) (fence.Lib, string, func(), error) {
	src, err := nvmlsrc.Open(spec)
	if err != nil {
		return nil, "", nil, err
	}
	return fence.NVML{Interface: src.NVML}, src.Kind, src.Close, nil
}

// allocationWait bounds how long the prolog waits for slurmctld to say what the job was
// given: a controller restart or failover takes some seconds, and the job waits for its
// prolog meanwhile, where a failed prolog drains the node and holds the job.
const allocationWait = 60 * time.Second

// allocationOf asks Slurm for the job's allocation on this node, again while slurmctld
// cannot be reached (1 s, 2 s, 4 s, then every 5 s apart, until ctx ends); any other
// answer, a refusal included, is the answer.
func allocationOf(ctx context.Context, env fenceEnv, j fenceJob) ([]fence.Slice, error) {
	var waited time.Duration
	wait := time.Second
	for {
		slices, err := env.allocated(ctx, j.opt.Scontrol, j.id, j.node)
		if err == nil || !errors.Is(err, slurmcli.ErrUnreachable) {
			return slices, err
		}
		// The pauses alone are bounded too: ctx holds the calls' own time.
		if ctx.Err() != nil || waited+wait > allocationWait {
			return nil, fmt.Errorf("slurmctld unreachable for %s: %w", waited.Round(time.Second), err)
		}
		env.sleep(wait)
		waited += wait
		wait = min(2*wait, 5*time.Second)
	}
}

// slurmAllocation reads the job's GPUs and shards on node from slurmctld's own record
// of that job alone (an array task's, a hetjob component's): per GPU on 24.11 and later
// (shard:N(A/T,B/T)), by index on 22.05 (IDX:), never from the job's environment.
func slurmAllocation(ctx context.Context, scontrol, job, node string) ([]fence.Slice, error) {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 20 * time.Second
	j, err := (&slurmcli.JobReader{Scontrol: run, Squeue: slurmcli.SqueueBeside(scontrol)}).One(ctx, job)
	if err != nil {
		return nil, err
	}
	return slicesOn(j, node)
}

// slicesOn is what job j holds on node, known only while Slurm says j runs there. A
// hook of a job Slurm no longer runs on the node (its extern step failed and slurmctld
// already requeued it, so the record shows it completing or pending with nothing on
// any GPU) must not read that as "nothing to fence": the step would then run its
// tasks unfenced until slurmstepd cancels it.
func slicesOn(j slurmcli.Job, node string) ([]fence.Slice, error) {
	if j.State != "RUNNING" || !slices.Contains(j.Nodes, node) {
		state := j.State
		if state == "" {
			state = "in no state Slurm named"
		} else if state == "RUNNING" {
			state = "running on other nodes"
		}
		return nil, fmt.Errorf("Slurm says job %s is %s, not running on %s, so what it holds here is not known", j.ID, strings.ToLower(state), node)
	}
	var out []fence.Slice
	for _, u := range j.Uses {
		if u.Node == node {
			out = append(out, fence.Slice{GPU: u.GPU, Shards: u.Shards, Whole: u.Whole, Spread: u.Spread})
		}
	}
	return out, nil
}

// drainUnlessReason drains node with gpumemd's reason unless it already has one: an
// admin's reason (or an earlier one of gpumemd's) is never overwritten.
func drainUnlessReason(scontrol, node, reason string) error {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 10 * time.Second
	c := slurmcli.ScontrolNode{Run: run}
	have, err := c.Reason(node)
	if err != nil {
		return err
	}
	if have != "" {
		return fmt.Errorf("node %s already has the reason %q; not drained over it", node, have)
	}
	return c.Drain(node, reason)
}

// resumeOwnFenceDrain resumes node when what drains it is gpumemd's failed fence of
// job: that job's next fence on this node succeeded. Any other reason (an admin's, the
// health monitor's, another job's fence) stays.
func resumeOwnFenceDrain(scontrol, node, job string) (bool, error) {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 10 * time.Second
	c := slurmcli.ScontrolNode{Run: run}
	have, err := c.Reason(node)
	if err != nil || drainreason.FenceJob(have) != job {
		return false, err
	}
	return true, c.Resume(node)
}

// firstLine is the first line of s, for a drain reason.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// fenceJob is what the prolog and the epilog share: the job, this node, its GPUs, the
// job's cgroup and the limits its allocation means.
type fenceJob struct {
	opt      options
	id, node string
	num      uint64
	gpus     []inventory.GPU
}

func loadFenceJob(args []string, env fenceEnv, cmd string) (fenceJob, error) {
	var j fenceJob
	path := config.Path()
	switch {
	case len(args) == 2 && args[0] == "--config":
		path = args[1]
	case len(args) != 0:
		return j, fmt.Errorf("usage: gpumemd %s [--config gpumem.conf]", cmd)
	}
	var err error
	if j.opt.Gpumemd, err = config.LoadGpumemd(path); err != nil {
		return j, err
	}
	j.opt.Shared, _ = config.Load(path) // its reader keeps safe defaults for a bad key
	id, err := fence.ParseJobID(env.getenv("SLURM_JOB_ID"))
	if err != nil {
		return j, err
	}
	j.id, j.num = fmt.Sprint(id), id
	j.node = env.getenv("SLURMD_NODENAME")
	if err := inventory.CheckNodeName(j.node); err != nil {
		return j, fmt.Errorf("SLURMD_NODENAME: %w", err)
	}
	inv, err := inventory.LoadPath(filepath.Join(j.opt.InventoryDir, j.node+".json"))
	if err != nil {
		return j, fmt.Errorf("this node's inventory: %w", err)
	}
	for _, n := range inv.Nodes {
		if n.Name == j.node {
			j.gpus = n.GPUs
		}
	}
	return j, nil
}

// driverGPUs reports whether any GPU of the node said it holds the driver fence.
func (j fenceJob) driverGPUs() []fence.Limit {
	var out []fence.Limit
	for _, g := range j.gpus {
		if g.FenceOf() == inventory.FenceDriver {
			out = append(out, fence.Limit{GPU: g.Index})
		}
	}
	return out
}

// fenceProlog is `gpumemd prolog`, slurm.conf's Prolog with PrologFlags=Contain,RunInJob
// (or spank_gpumem.so's call in the extern step): slurmstepd runs it as root inside the
// job's extern step, once the job's cgroup exists and before any step of the job
// starts. For a shard job on GPUs this node said hold the driver fence, it sets each
// GPU's hard limit (the job's shards there x ShardUnit) on the job's cgroup, the
// directory Slurm put this very process in. Exit 0: fenced, or nothing to fence. Exit
// 1: a fence this node promised could not be set within FenceTimeout; Slurm then
// drains the node and requeues the job held, so the job never runs unfenced here
// (with FenceFailure=drain gpumemd first drains the node with its own reason).
func fenceProlog(args []string, env fenceEnv, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "prolog")
	if len(j.driverGPUs()) == 0 {
		// Nothing here said it fences by driver (or no inventory says so): no Slurm or
		// NVML call for any job.
		if err != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: no fence:", err)
		}
		return 0
	}
	if err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.opt.FenceTimeout)
	defer cancel()
	j.forget() // a record left from an earlier run of this job id is not this run's
	rec, err := j.set(ctx, env, stderr)
	if err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	if err := j.record(rec); err != nil {
		// fence-check (SPANK) stops the job's steps without it; the limit stays on
		// the cgroup, which goes with the job.
		return fenceFailed(j, env, stderr, fmt.Errorf("the job's fence is set but not recorded: %w", err))
	}
	if rec.Cgroup != "" {
		fmt.Fprintf(stderr, "gpumemd prolog: job %s fenced by driver on %s (GPUs %v)\n", j.id, rec.Cgroup, rec.GPUs)
	}
	if j.opt.FenceFailure == "drain" {
		// This job's fence failed here before and drained the node; it holds now.
		if resumed, err := env.resumeFence(j.opt.Scontrol, j.node, j.id); err != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: the node's own fence drain not lifted:", err)
		} else if resumed {
			fmt.Fprintf(stderr, "gpumemd prolog: job %s's fence holds now: lifted the drain its failure set on %s\n", j.id, j.node)
		}
	}
	return 0
}

// set reads the job's allocation, decides and sets its limits, each part within ctx:
// a part that does not end in time (slurmctld, the cgroup file system, the driver) is
// named in the error, and the prolog fails rather than wait on it.
func (j fenceJob) set(ctx context.Context, env fenceEnv, stderr io.Writer) (fence.Record, error) {
	rec := fence.Record{Job: j.id}
	var slices []fence.Slice
	if err := within(ctx, j.opt.FenceTimeout, "reading the job's allocation from slurmctld", func() (err error) {
		slices, err = allocationOf(ctx, env, j)
		return err
	}); err != nil {
		return rec, fmt.Errorf("the job's allocation: %w", err)
	}
	d, err := fence.Plan(slices, j.gpus, j.opt.Shared.ShardUnitMiB)
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
	self, err := env.readFile("/proc/self/cgroup")
	if err != nil {
		return rec, err
	}
	dir, err := fence.FindJobCgroup(self, j.opt.FenceCgroupRoot, j.opt.FenceCgroupScope, j.num)
	if err != nil {
		return rec, err
	}
	if err := within(ctx, j.opt.FenceTimeout, "checking the job's cgroup "+dir, func() error {
		rec.CgroupID, err = fence.CgroupID(env.lstat, dir)
		return err
	}); err != nil {
		return rec, err
	}
	if len(d.Spread) > 0 {
		// Slurm 22.05 did not say how the job's shards lie over these GPUs.
		fmt.Fprintf(stderr, "gpumemd prolog: job %s: Slurm lists GPUs %v for its shards without saying how many lie on each; each gets the most the job may hold there\n", j.id, d.Spread)
	}
	err = within(ctx, j.opt.FenceTimeout, "setting the limits through NVML", func() error {
		lib, _, closeLib, err := env.openNVML(j.opt.NVML)
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

// record leaves the job's fence where `gpumemd task-prolog` (run as the job's user)
// reads it, where `gpumemd fence-check` finds that the prolog finished for it, and
// where the epilog and the sweep find the cgroup whose limits to clear.
func (j fenceJob) record(r fence.Record) error {
	if j.opt.FenceState == "" {
		return nil
	}
	if err := os.MkdirAll(j.opt.FenceState, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(j.opt.FenceState, j.id), r.Encode(), 0o644)
}

func (j fenceJob) forget() {
	if j.id != "" && j.opt.FenceState != "" {
		_ = os.Remove(filepath.Join(j.opt.FenceState, j.id))
	}
}

// JobFence is the fence the prolog recorded for job id, "" when none (or when the job
// held no GPU there).
func JobFence(stateDir, id string) string {
	r, ok := readRecord(stateDir, id)
	if !ok || r.Fence == fence.NoGPUs || r.Failed != "" {
		return ""
	}
	return r.Fence
}

// readRecord is what the prolog recorded for job id; false for nothing (or anything
// unreadable: the directory is root's, but a bad file counts as none).
func readRecord(stateDir, id string) (fence.Record, bool) {
	if _, err := fence.ParseJobID(id); err != nil || stateDir == "" {
		return fence.Record{}, false
	}
	b, err := atomicfile.ReadCapped(filepath.Join(stateDir, id), fence.MaxRecord)
	if err != nil {
		return fence.Record{}, false
	}
	r, err := fence.ParseRecord(b, id)
	return r, err == nil
}

// fenceCheck is `gpumemd fence-check`, run by gpumem's SPANK plugin as root in each
// step's slurmstepd before its tasks (docs/gpumemd.md): on a node that said it fences
// by driver, a step runs only when the prolog recorded this job's outcome. Slurm only
// logs a failing extern-step hook, so this is what keeps a job whose limit could not be
// set from running unfenced there. Exit 0: the step may run; 1: it may not.
func fenceCheck(args []string, env fenceEnv, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "fence-check")
	if rec, ok := readRecord(j.opt.FenceState, j.id); ok {
		if rec.Failed != "" {
			// Whatever the node promises now: this run's fence failed.
			fmt.Fprintf(stderr, "gpumem: job %s: its GPU memory fence could not be set on %s (%s), so this step does not run unfenced\n", j.id, j.node, rec.Failed)
			return 1
		}
		return 0
	}
	if len(j.driverGPUs()) == 0 {
		return 0 // nothing here promised a fence
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpumem: job %s: the GPU memory fence cannot be checked, so this step does not run: %v\n", j.id, err)
		return 1
	}
	// No record for this run: the extern step's hook did not run for it (22.05 starts
	// no extern step again for a job requeued onto the same node, and the first run's
	// epilog removed that run's record) or failed. The step's slurmstepd is in the
	// job's cgroup too, so the fence is set from here, the same way, or the step fails.
	ctx, cancel := context.WithTimeout(context.Background(), j.opt.FenceTimeout)
	defer cancel()
	rec, err := j.set(ctx, env, stderr)
	if err == nil {
		err = j.record(rec)
	}
	if err == nil {
		if rec.Cgroup != "" {
			fmt.Fprintf(stderr, "gpumemd fence-check: job %s fenced by driver on %s (GPUs %v): its extern step had not\n", j.id, rec.Cgroup, rec.GPUs)
		}
		return 0
	}
	fmt.Fprintf(stderr, "gpumem: job %s: %s fences GPU memory by driver, but this job's limit could not be set there (%v; PrologFlags=Contain and plugstack.conf's %s are needed; the prolog's failures are in %s), so this step does not run unfenced\n",
		j.id, j.node, err, SpankPlugin, j.opt.FenceFailures)
	return 1
}

// fenceFailed counts and logs a fence that failed, drains by policy, and fails the
// prolog so the job does not run here unfenced.
func fenceFailed(j fenceJob, env fenceEnv, stderr io.Writer, err error) int {
	// The run's record says it failed, so that no step of it runs even if the node's
	// inventory stops promising the fence before the step's check reads it.
	if j.record(fence.Record{Job: j.id, Fence: inventory.FenceDriver, Failed: fence.FailureReason(err)}) != nil {
		j.forget()
	}
	msg := fmt.Sprintf("job %s on %s: driver fence not set: %v", j.id, j.node, err)
	fmt.Fprintln(stderr, "gpumemd prolog:", msg)
	if j.opt.FenceFailures != "" {
		line := env.now().UTC().Format(time.RFC3339) + " " + strings.ReplaceAll(msg, "\n", " ") + "\n"
		if f, ferr := os.OpenFile(j.opt.FenceFailures, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); ferr == nil {
			_, _ = f.WriteString(line)
			f.Close()
		} else {
			fmt.Fprintln(stderr, "gpumemd prolog: cannot count the failure:", ferr)
		}
	}
	if j.opt.FenceFailure == "drain" && j.node != "" {
		reason := drainreason.ForFence(j.id, "GPU memory fence not set: "+firstLine(err.Error()))
		if derr := env.drain(j.opt.Scontrol, j.node, reason); derr != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: not drained:", derr)
		}
	}
	return 1
}

// fenceEpilog is `gpumemd epilog` (Epilog, with the same PrologFlags): it clears the
// limits the prolog recorded, on the very cgroup it set them on (same path and inode),
// soft limit zeroed first as NVML asks before a cgroup goes, so no reservation outlives
// the job. It always exits 0: a failing epilog would drain the node for a limit that
// gpumemd's sweep clears anyway at its next start; what failed is logged.
func fenceEpilog(args []string, env fenceEnv, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "epilog")
	if err != nil {
		fmt.Fprintln(stderr, "gpumemd epilog: nothing cleared:", err)
		return 0
	}
	r, ok := readRecord(j.opt.FenceState, j.id)
	j.forget()
	if !ok || r.Cgroup == "" {
		return 0
	}
	if err := clearRecorded(env, j.opt.NVML, r); err != nil {
		fmt.Fprintf(stderr, "gpumemd epilog: job %s: %v\n", j.id, err)
	}
	return 0
}

// clearRecorded lifts the limits of record r, if its cgroup is still the directory
// the prolog set them on; a directory gone (or made anew) took its limits with it.
func clearRecorded(env fenceEnv, nvmlSpec string, r fence.Record) error {
	id, err := fence.CgroupID(env.lstat, r.Cgroup)
	if err != nil || id != r.CgroupID {
		return nil
	}
	lib, _, closeLib, err := env.openNVML(nvmlSpec)
	if err != nil {
		return fmt.Errorf("limits on %s not cleared: %w", r.Cgroup, err)
	}
	defer closeLib()
	limits := make([]fence.Limit, len(r.GPUs))
	for i, g := range r.GPUs {
		limits[i] = fence.Limit{GPU: g}
	}
	if err := fence.Clear(lib, r.Cgroup, limits); err != nil {
		return fmt.Errorf("limits on %s not cleared: %w", r.Cgroup, err)
	}
	return nil
}
