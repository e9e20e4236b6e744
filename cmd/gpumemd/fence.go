package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/config"
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
	now       func() time.Time
	sleep     func(time.Duration)
}

func realFenceEnv() fenceEnv {
	if os.Getenv("PATH") == "" {
		// slurmd gives its prolog no PATH: scontrol is looked up in the system's own
		// directories only, never in one a user could write.
		os.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return fenceEnv{getenv: os.Getenv, readFile: os.ReadFile, lstat: os.Lstat, openNVML: openFenceNVML,
		allocated: slurmAllocation, drain: drainUnlessReason, now: time.Now, sleep: time.Sleep}
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
// (scontrol -d show job ID): per GPU on 24.11 and later (shard:N(A/T,B/T)), by index
// on 22.05 (IDX:), never from the job's environment.
func slurmAllocation(ctx context.Context, scontrol, job, node string) ([]fence.Slice, error) {
	run := slurmcli.Scontrol(scontrol)
	run.Timeout = 20 * time.Second
	js, err := (&slurmcli.JobReader{Scontrol: run, Squeue: slurmcli.SqueueBeside(scontrol)}).Show(ctx, job)
	if err != nil {
		return nil, err
	}
	if len(js.Jobs) != 1 || js.Jobs[0].ID != job {
		return nil, fmt.Errorf("scontrol show job %s: %d records (%v)", job, len(js.Jobs), errors.Join(js.Bad...))
	}
	var out []fence.Slice
	for _, u := range js.Jobs[0].Uses {
		if u.Node == node {
			out = append(out, fence.Slice{GPU: u.GPU, Shards: u.Shards, Whole: u.Whole})
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

// fenceJob is what the prolog and the epilog share: the job, this node, its GPUs, the
// job's cgroup and the limits its allocation means.
type fenceJob struct {
	opt      options
	id, node string
	dir      string
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
	j.id = fmt.Sprint(id)
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
	j.dir, err = fence.JobCgroup(j.opt.FenceCgroupRoot, j.opt.FenceCgroupScope, id)
	return j, err
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

// fenceProlog is `gpumemd prolog`, slurm.conf's Prolog with PrologFlags=Contain,RunInJob:
// slurmstepd runs it as root inside the job's extern step, once the job's cgroup exists
// and before any step of the job starts. For a shard job on GPUs this node said hold
// the driver fence, it sets each GPU's hard limit (the job's shards there x ShardUnit)
// on the job's cgroup. Exit 0: fenced, or nothing to fence. Exit 1: a fence this node
// promised could not be set; Slurm then drains the node and requeues the job held, so
// the job never runs unfenced here (with FenceFailure=drain gpumemd first drains the
// node with its own reason).
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
	ctx, cancel := context.WithTimeout(context.Background(), allocationWait)
	defer cancel()
	slices, err := allocationOf(ctx, env, j)
	if err != nil {
		return fenceFailed(j, env, stderr, fmt.Errorf("the job's allocation: %w", err))
	}
	d, err := fence.Plan(slices, j.gpus, j.opt.Shared.ShardUnitMiB)
	if err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	if len(d.Limits) == 0 {
		j.record(stderr, d.Fence)
		return 0
	}
	j.forget() // a record left from an earlier run of this job id is not this run's
	if err := fence.CheckDir(env.lstat, j.dir); err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	lib, kind, closeLib, err := env.openNVML(j.opt.NVML)
	if err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	defer closeLib()
	// A fake NVML stands for a node without Slurm's cgroup/v2 (the lab): there the test
	// made the job's directory; a real node proves the path by the prolog's own cgroup.
	if kind != nvmlsrc.KindFake {
		self, err := env.readFile("/proc/self/cgroup")
		if err == nil {
			err = fence.InJob(self, j.opt.FenceCgroupRoot, j.dir)
		}
		if err != nil {
			return fenceFailed(j, env, stderr, err)
		}
	}
	if err := fence.Apply(lib, j.dir, d.Limits); err != nil {
		return fenceFailed(j, env, stderr, err)
	}
	j.record(stderr, d.Fence)
	parts := make([]string, len(d.Limits))
	for i, l := range d.Limits {
		parts[i] = fmt.Sprintf("GPU %d: %d MiB", l.GPU, l.Bytes>>20)
	}
	fmt.Fprintf(stderr, "gpumemd prolog: job %s fenced by driver on %s (%s)\n", j.id, j.dir, strings.Join(parts, ", "))
	return 0
}

// noGPUs is the record of a job that holds no GPU on a node that fences: there was
// nothing to fence, which `gpumemd fence-check` must tell from a prolog that failed.
const noGPUs = "nogpu"

// record leaves the job's fence where `gpumemd task-prolog` (run as the job's user)
// reads it, so the job can see which fence it got, and where `gpumemd fence-check`
// finds that the prolog finished for it. A failure to write it is logged; under SPANK
// fence-check then stops the job's steps.
func (j fenceJob) record(stderr io.Writer, f string) {
	if f == "" {
		f = noGPUs
	}
	if j.opt.FenceState == "" {
		return
	}
	err := os.MkdirAll(j.opt.FenceState, 0o755)
	if err == nil {
		err = atomicfile.Write(filepath.Join(j.opt.FenceState, j.id), []byte(f+"\n"), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gpumemd prolog: fence not recorded for the task prolog:", err)
	}
}

func (j fenceJob) forget() {
	if j.id != "" && j.opt.FenceState != "" {
		_ = os.Remove(filepath.Join(j.opt.FenceState, j.id))
	}
}

// JobFence is the fence the prolog recorded for job id, "" when none (or when the job
// held no GPU there).
func JobFence(stateDir, id string) string {
	switch f := recorded(stateDir, id); f {
	case inventory.FenceDriver, inventory.FenceHardware, inventory.FenceMPS, inventory.FenceNone:
		return f
	}
	return ""
}

// recorded is what the prolog recorded for job id: a fence, noGPUs, or "" for nothing
// (or anything else: the directory is root's, but a bad file counts as none).
func recorded(stateDir, id string) string {
	if _, err := fence.ParseJobID(id); err != nil || stateDir == "" {
		return ""
	}
	b, err := atomicfile.ReadCapped(filepath.Join(stateDir, id), 32)
	if err != nil {
		return ""
	}
	switch f := strings.TrimSpace(string(b)); f {
	case inventory.FenceDriver, inventory.FenceHardware, inventory.FenceMPS, inventory.FenceNone, noGPUs:
		return f
	}
	return ""
}

// fenceCheck is `gpumemd fence-check`, run by gpumem's SPANK plugin as root in each
// step's slurmstepd before its tasks (docs/gpumemd.md): on a node that said it fences
// by driver, a step runs only when the prolog recorded this job's outcome. Slurm only
// logs a failing extern-step hook, so this is what keeps a job whose limit could not be
// set from running unfenced there. Exit 0: the step may run; 1: it may not.
func fenceCheck(args []string, env fenceEnv, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "fence-check")
	if len(j.driverGPUs()) == 0 {
		return 0 // nothing here promised a fence
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpumem: job %s: the GPU memory fence cannot be checked, so this step does not run: %v\n", j.id, err)
		return 1
	}
	if recorded(j.opt.FenceState, j.id) != "" {
		return 0
	}
	fmt.Fprintf(stderr, "gpumem: job %s: %s fences GPU memory by driver, but this job's limit was not set there (gpumemd prolog failed or did not run: PrologFlags=Contain and plugstack.conf's %s are needed; its failures are in %s), so this step does not run unfenced\n",
		j.id, j.node, SpankPlugin, j.opt.FenceFailures)
	return 1
}

// fenceFailed counts and logs a fence that failed, drains by policy, and fails the
// prolog so the job does not run here unfenced.
func fenceFailed(j fenceJob, env fenceEnv, stderr io.Writer, err error) int {
	j.forget()
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
		reason := "gpumem: GPU memory fence failed for job " + j.id
		if derr := env.drain(j.opt.Scontrol, j.node, reason); derr != nil {
			fmt.Fprintln(stderr, "gpumemd prolog: not drained:", derr)
		}
	}
	return 1
}

// fenceEpilog is `gpumemd epilog` (Epilog, with the same PrologFlags): it clears the
// limits on the job's cgroup on every driver-fenced GPU of the node, whatever the job
// held, before Slurm removes the cgroup (which clears them too). It always exits 0: a
// failing epilog would drain the node for a limit that goes with the cgroup anyway;
// what failed is logged and counted.
func fenceEpilog(args []string, env fenceEnv, stderr io.Writer) int {
	j, err := loadFenceJob(args, env, "epilog")
	if j.id != "" && j.opt.FenceState != "" {
		_ = os.Remove(filepath.Join(j.opt.FenceState, j.id))
	}
	if err != nil || len(j.driverGPUs()) == 0 {
		if err != nil {
			fmt.Fprintln(stderr, "gpumemd epilog: nothing cleared:", err)
		}
		return 0
	}
	if err := fence.CheckDir(env.lstat, j.dir); err != nil {
		return 0 // no job cgroup (any more): no limit can outlive it
	}
	lib, _, closeLib, err := env.openNVML(j.opt.NVML)
	if err == nil {
		defer closeLib()
		err = fence.Clear(lib, j.dir, j.driverGPUs())
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpumemd epilog: job %s: limits not cleared (the cgroup's removal clears them): %v\n", j.id, err)
	}
	return 0
}
