package plugin

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Options are the client options cli_filter reads and writes, by the names
// slurm_option_get takes. Gres comes back from Slurm with a gres prefix (slurmgres.Colon
// or slurmgres.Slash) on each entry; the --gpus* options hold "[TYPE:]N". The GRES options and Partition may be
// rewritten; the rest is the job's shape, read only, "" when unset.
type Options struct {
	Gres, GPUs, GPUsPerNode, GPUsPerSocket, GPUsPerTask, Partition string

	Nodes         string // "nodes": "N" or "MIN-MAX"
	NodeList      string // "nodelist"
	Exclude       string // "exclude"
	Constraint    string // "constraint"
	Array         string // "array"
	Reservation   string // "reservation"
	NTasksPerNode string // "ntasks-per-node"
	NTasks        string // "ntasks"
	// "exclusive": "exclusive", "user", "mcs" (or, from 24.11, "topo") hold whole nodes;
	// "oversubscribe" and "unset" do not.
	Exclusive    string
	MemPerGPU    string // "mem-per-gpu", e.g. "2048" (MiB)
	CPUsPerGPU   string // "cpus-per-gpu"
	NTasksPerGPU string // "ntasks-per-gpu"
	GPUFreq      string // "gpu-freq", e.g. "medium"
	// TRESPerTask is "tres-per-task" (24.11 on), e.g. "cpu=2,gres/gpu:1". Where it gives
	// GPUs it is the job's GPUs per task (the client may also print them as
	// --gpus-per-task then), and is rewritten.
	TRESPerTask string
	// HetOffset is the component of a heterogeneous job (0: the first, or another job).
	HetOffset uint32
}

// Fields builds the job_desc fields the client would send, the way srun, sbatch and
// salloc build them: --gpus-per-node before --gres in tres_per_node, --gpus in
// tres_per_job. prefix is what the client's release writes (slurmgres.Colon or Slash).
func (o Options) Fields(prefix string) Fields {
	minN, maxN := nodeCount(o.Nodes)
	return Fields{
		PerNode:       join(gpuEntry(prefix, o.GPUsPerNode), o.Gres),
		PerJob:        gpuEntry(prefix, o.GPUs),
		PerSocket:     gpuEntry(prefix, o.GPUsPerSocket),
		PerTask:       o.perTask(prefix),
		Partition:     o.Partition,
		ReqNodes:      o.NodeList,
		ExcNodes:      o.Exclude,
		Features:      o.Constraint,
		Reservation:   o.Reservation,
		ArrayInx:      o.Array,
		MinNodes:      minN,
		MaxNodes:      maxN,
		NTasksPerNode: count(o.NTasksPerNode),
		NTasks:        count(o.NTasks),
		Exclusive:     exclusive(o.Exclusive),
		MemPerTRES:    gpuEntry(prefix, o.MemPerGPU),
		CPUsPerTRES:   gpuEntry(prefix, o.CPUsPerGPU),
		NTasksPerTRES: count(o.NTasksPerGPU),
		TRESFreq:      gpuFreq(o.GPUFreq),
		HetJob:        o.HetOffset > 0,
	}
}

// perTask is the tres_per_task the client builds: --tres-per-task when it names GPUs,
// else --gpus-per-task.
func (o Options) perTask(prefix string) string {
	if o.tresPerTaskGPUs() {
		return o.TRESPerTask
	}
	return gpuEntry(prefix, o.GPUsPerTask)
}

func (o Options) tresPerTaskGPUs() bool { return strings.Contains(o.TRESPerTask, "gpu") }

// gpuFreq is --gpu-freq as tres_freq holds it.
func gpuFreq(v string) string {
	if v == "" {
		return ""
	}
	return slurmgres.WithGPU("", v)
}

// exclusive reads --exclusive as slurm_option_get prints it: every value but
// "oversubscribe" and "unset" (or nothing) keeps other jobs off the job's nodes.
func exclusive(s string) bool {
	switch strings.TrimSpace(s) {
	case "", "unset", "oversubscribe":
		return false
	}
	return true
}

// nodeCount reads --nodes as slurm_option_get prints it: "N", or "MIN-MAX" where a MAX
// of 0 means none was given (an unset option prints "1-0"). Anything unreadable is 0, unset.
func nodeCount(s string) (minN, maxN uint32) {
	lo, hi, ranged := strings.Cut(strings.TrimSpace(s), "-")
	minN = count(lo)
	if !ranged {
		return minN, minN
	}
	if maxN = count(hi); maxN != 0 && maxN < minN {
		maxN = 0
	}
	return minN, maxN
}

// count reads a count option as Slurm prints it; negative (an unset option prints NO_VAL
// as -2), Slurm's NO_VAL16 and above, or unreadable, are 0: unset.
func count(s string) uint32 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n >= 0xfffe {
		return 0
	}
	return uint32(n)
}

// withFields is o with its GRES options and partition replaced by rewritten fields; the
// shape options stay as given. Everything per node goes into --gres (a gpu count there
// means what --gpus-per-node means); the other fields must hold only GPU counts, the one
// thing their options can say.
func (o Options) withFields(f Fields) (Options, error) {
	if o.tresPerTaskGPUs() {
		// Written back whole, its other entries kept; --gpus-per-task, where the client
		// printed the same GPUs as one, is given the same count, so that the two agree.
		had := o.GPUsPerTask != ""
		o.TRESPerTask, f.PerTask = f.PerTask, ""
		if had {
			f.PerTask = gpuPart(o.TRESPerTask)
		}
	}
	o.Gres, o.GPUs, o.GPUsPerNode, o.GPUsPerSocket, o.GPUsPerTask, o.Partition = f.PerNode, "", "", "", "", f.Partition
	for _, c := range []struct {
		dst   *string
		field string
		name  string
	}{{&o.GPUs, f.PerJob, "--gpus"}, {&o.GPUsPerSocket, f.PerSocket, "--gpus-per-socket"}, {&o.GPUsPerTask, f.PerTask, "--gpus-per-task"}} {
		if c.field == "" {
			continue
		}
		n, ok := slurmgres.CutGPU(c.field)
		if !ok || strings.ContainsAny(n, ",;") {
			return Options{}, fmt.Errorf("%s cannot say %q", c.name, c.field)
		}
		*c.dst = n
	}
	return o, nil
}

// gpuPart is the gpu entry of a TRES list ("" when none).
func gpuPart(list string) string {
	for _, e := range strings.Split(list, ",") {
		if strings.Contains(e, "gpu") {
			return e
		}
	}
	return ""
}

// gpuEntry is the tres entry a --gpus* option becomes, or "" for an unset option.
func gpuEntry(prefix, v string) string {
	if v == "" {
		return ""
	}
	return slurmgres.WithGPU(prefix, v)
}

func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "," + b
}

// SubmitOptions is cli_filter's decision. A step inside an allocation (stepOf, the job's
// id, non-zero) takes a share of what its job holds (job, as slurmctld stored it);
// anything else is admitted exactly as job_submit would admit it, so that srun sends
// slurmctld and its own step the same native GRES. A non-empty refusal stops the client.
func (p *Plugin) SubmitOptions(o Options, stepOf uint32, job Fields) (out Options, refusal string) {
	prefix := slurmgres.Colon
	if strings.Contains(o.Gres, slurmgres.Slash) {
		prefix = slurmgres.Slash
	}
	cl, args := clientCommandLine()
	given, comps := commandLine(cl, args, o.HetOffset)
	if r := given.refusal(""); r != "" {
		return o, r
	}
	f := o.Fields(prefix)
	// cli_filter is told the component's offset, which is 0 both for the first
	// component and for a job of its own; the command line tells them apart. A batch
	// script's "#SBATCH hetjob" lines are not seen here (cli_filter never gets it).
	f.HetJob = f.HetJob || comps > 1
	if !AsksMem(f) {
		return o, ""
	}
	if stepOf != 0 {
		gres, err := Step(f.PerNode, job, stepOf, p.current(false).cfg.ShardUnitMiB, p.memOf)
		if err != nil {
			return o, err.Error()
		}
		out = o
		out.Gres, out.GPUsPerNode = gres, ""
		p.log.verbosef("step of job %d: %s -> %s", stepOf, f.PerNode, gres)
		return out, ""
	}
	p.hetMu.Lock()
	defer p.hetMu.Unlock()
	if o.HetOffset == 0 {
		p.het = nil // a new job: its first component, or one of a kind
	}
	v, hosts := p.decide(p.current(true), f, p.het, true)
	p.het = append(p.het, hosts...)
	if v.Refusal != "" || v.Fields == f {
		return o, v.Refusal
	}
	out, err := o.withFields(v.Fields)
	if err != nil {
		p.log.errorf("cannot write %+v back as options: %v; leaving the options to job_submit", v.Fields, err)
		return o, ""
	}
	return out, ""
}
