// Package refusal is every text a user reads when gpumem refuses a job, a step or a
// change to a pending job, and the words those texts are made of: the request as the
// user wrote it, its shape, the reason a partition or node cannot serve it. Changing
// how a refusal reads is an edit here alone; the code that decides to refuse (admit,
// request, plugin) passes plain values and never words of its own. Pure: no I/O, no
// state. Users never see Slurm's field names (tres_per_node, ...), only the options
// they type. How many refusals of each class there were is internal/refusalcount's.
package refusal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/clip"
	"github.com/gpumem/gpumem/internal/units"
)

// --- The request, in the user's words -------------------------------------------------

// Asked is a gpu:mem request as the user wrote it, in option form: its size as typed,
// its GPUs (gpus in all; perTask per task, 0 when not per task; perJob for --gpus), a
// pinned GPU type, the options that count GPUs as Slurm does (only), and its shape's
// words (Shape).
func Asked(size string, gpus, perTask int64, perJob bool, model, only, shape string) string {
	w := []string{"--gres=gpu:mem:" + size}
	count := strconv.FormatInt(gpus, 10)
	if model != "" {
		count = model + ":" + count
	}
	switch {
	case perTask > 0:
		count = strconv.FormatInt(perTask, 10)
		if model != "" {
			count = model + ":" + count
		}
		w = append(w, "--gpus-per-task="+count)
		if gpus > perTask {
			w = append(w, "for "+strconv.FormatInt(gpus/perTask, 10)+" tasks")
		}
	case perJob && (gpus > 1 || model != ""):
		w = append(w, "--gpus="+count)
	case gpus > 1 || model != "":
		w = append(w, "--gpus-per-node="+count)
	}
	if shape != "" {
		w = append(w, shape)
	}
	if only := strings.TrimSpace(strings.ReplaceAll(" "+only+" ", " --gpus-per-task ", " ")); only != "" {
		w = append(w, only)
	}
	return strings.Join(w, " ")
}

// Shape is the options that narrow where a job runs, for a message ("" when none):
// nodes it spans, required nodes (--nodelist), excluded ones (sorted) and --constraint.
func Shape(nodes int64, req, exc []string, features string) string {
	var w []string
	if nodes > 1 && int(nodes) != len(req) {
		w = append(w, "--nodes="+strconv.FormatInt(nodes, 10))
	}
	if len(req) > 0 {
		w = append(w, "--nodelist="+clip.String(strings.Join(req, ","), clip.List))
	}
	if len(exc) > 0 {
		w = append(w, "--exclude="+clip.String(strings.Join(exc, ","), clip.List))
	}
	if features != "" {
		w = append(w, "--constraint="+features)
	}
	return strings.Join(w, " ")
}

// Count says what a request's count and shape are, for "the most that fits ...".
func Count(gpus int64, perJob bool, model string, nodes int64) string {
	var w []string
	if gpus > 1 {
		per := " on one node"
		if perJob {
			per = ""
		}
		w = append(w, "for "+strconv.FormatInt(gpus, 10)+" GPUs"+per)
	}
	if model != "" {
		w = append(w, "on type "+model)
	}
	if nodes > 1 {
		w = append(w, "on "+strconv.FormatInt(nodes, 10)+" nodes")
	}
	if len(w) == 0 {
		return "on the nodes the job may use"
	}
	return strings.Join(w, " ")
}

// JoinOptions joins option names for a message, skipping empty ones.
func JoinOptions(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + " " + b
}

// MIGOf names a MIG instance of profile on a GPU product.
func MIGOf(profile, product string) string { return "MIG " + profile + " of " + product }

// ShardsOf names the shards of a GPU product.
func ShardsOf(product string) string { return "shards of " + product }

// --- A request no GPU the job may use holds -------------------------------------------

// NoFit is the refusal of a request (Asked) that fits nowhere the job may use: one
// reason per partition it may use (none: gpumem knows no partition), and the
// partitions that would take it as it is.
func NoFit(asked string, reasons, elsewhere []string) string {
	var b strings.Builder
	b.WriteString("gpumem: you asked for " + asked + ", but ")
	if len(reasons) == 0 {
		b.WriteString("gpumem knows no partition with GPUs")
	}
	b.WriteString(strings.Join(reasons, "; "))
	if len(elsewhere) > 0 {
		b.WriteString(". It fits in partition " + strings.Join(elsewhere, ", ") + " (--partition=" + elsewhere[0] + ")")
	}
	return b.String()
}

// The reasons a partition cannot serve a request, for NoFit.

// PartitionUnknown: the partition has no GPU node in the inventory.
func PartitionUnknown(name string) string {
	return "partition " + name + " has no GPU node gpumem knows"
}

// NodeUnknown: a required node has no GPU in the inventory.
func NodeUnknown(node string) string { return "node " + node + " has no GPU gpumem knows" }

// NodeNotIn: a required node is not in the partition; in are the partitions it is in.
func NodeNotIn(node, partition string, in []string) string {
	s := "node " + node + " is not in partition " + partition
	if len(in) > 0 {
		s += " (it is in " + strings.Join(in, ", ") + ")"
	}
	return s
}

// NodeRequiredAndExcluded: a node is in both --nodelist and --exclude.
func NodeRequiredAndExcluded(node string) string {
	return "node " + node + " is both required (--nodelist) and excluded (--exclude)"
}

// NodeLacksFeatures: a required node does not have the job's --constraint.
func NodeLacksFeatures(node, features string) string {
	return "node " + node + " does not have --constraint=" + features
}

// OnNode: a required node cannot hold the request by itself; most is NodeHasNoGPUs or
// NodeHolds.
func OnNode(node, most string) string { return "on node " + node + " " + most }

// NodeHasNoGPUs: a node has fewer than gpus GPUs (of type model) for the request; its
// largest is product, of largestMiB.
func NodeHasNoGPUs(gpus int64, model, product string, largestMiB int64) string {
	if model != "" {
		model = " of type " + model
	}
	return "there are no " + strconv.FormatInt(gpus, 10) + " GPUs" + model + " (the largest is " + product + ", " + units.GiBAndMiB(largestMiB) + ")"
}

// NodeHolds: a node's GPUs (product, of largestMiB) hold at most mostMiB per GPU.
func NodeHolds(product string, largestMiB, mostMiB int64) string {
	return "the GPUs are " + product + " with " + units.GiBAndMiB(largestMiB) + "; up to gpu:mem:" + units.FormatSize(mostMiB) + " per GPU fits there"
}

// LargestGPU: a one-GPU request is larger than the partition's largest GPU (product, of
// largestMiB); mostMiB per GPU fits there, on by.
func LargestGPU(partition string, largestMiB int64, product string, mostMiB int64, by string) string {
	s := "the largest GPU in partition " + partition + " has " + units.GiBAndMiB(largestMiB) + " (" + product + "); up to gpu:mem:" + units.FormatSize(mostMiB) + " per GPU fits there"
	if by != product {
		// The most that fits is not all of the largest GPU (a MIG instance of it, or
		// another GPU): name what holds it, or the two figures seem to disagree.
		s += " (on " + by + ")"
	}
	return s
}

// MostFits: at most mostMiB per GPU (on by) fits the request's count and shape (Count)
// in the partition; holding (> 0) of its nodes hold the size asked, on which runs (> 0)
// nodes it would run.
func MostFits(partition, count string, mostMiB int64, by string, holding int64, size string, runs int64) string {
	s := "in partition " + partition + ", the most that fits " + count + " is gpu:mem:" + units.FormatSize(mostMiB) + " per GPU (" + by + ")"
	if holding > 0 {
		s += "; only " + strconv.FormatInt(holding, 10) + " of its nodes can hold gpu:mem:" + size
		if runs > 0 {
			s += " (--nodes=" + strconv.FormatInt(runs, 10) + " runs it)"
		}
	}
	return s
}

// FewerNodes: the partition has fewer than nodes usable nodes that hold the request
// (holding do); it fits on fits (> 0) nodes.
func FewerNodes(partition string, nodes, holding, fits int64) string {
	s := "partition " + partition + " has fewer than " + strconv.FormatInt(nodes, 10) + " nodes the job may use with GPUs of one kind for it (" + strconv.FormatInt(holding, 10) + " hold it)"
	if fits > 0 {
		s += "; it fits on " + strconv.FormatInt(fits, 10) + " (--nodes=" + strconv.FormatInt(fits, 10) + ")"
	}
	return s
}

// NoGPUsPerJob: the partition has no gpus GPUs of one type the job may use.
func NoGPUsPerJob(partition string, gpus int64) string {
	return "partition " + partition + " has no " + strconv.FormatInt(gpus, 10) + " GPUs of one type usable by the job"
}

// NoGPUsPerNode: no node of the partition has gpus GPUs of one type.
func NoGPUsPerNode(partition string, gpus int64) string {
	return "partition " + partition + " has no " + strconv.FormatInt(gpus, 10) + " GPUs of one type on one node"
}

// NoGPUOfType: the partition has no usable GPU of the type pinned.
func NoGPUOfType(partition, model string) string {
	return "partition " + partition + " has no usable GPU of type " + model
}

// NoUsableNode: no GPU node of the partition may run the job.
func NoUsableNode(partition string) string {
	return "partition " + partition + " has no GPU node the job may use"
}

// FenceRequired: only unfenced shards hold the request, under Fence = require; it would
// run as gres in partitions parts on a GPU without a fence.
func FenceRequired(asked string, cands []string, gres string, parts []string) string {
	return "gpumem: you asked for " + asked + ", but this site requires a memory fence for slices of shared GPUs (Fence = require), " +
		"and no GPU with a fence in partition " + strings.Join(cands, ", ") + " holds it as a slice, nor does a MIG instance or a whole GPU the job may use. " +
		"It would run as " + gres + " in partition " + strings.Join(parts, ", ") + " on a GPU without a fence. " +
		"Ask for a size a MIG instance or a whole GPU holds, or ask your administrator which nodes fence GPU memory (gpumemctl inventory)"
}

// Het: every form that holds a heterogeneous job's component is on nodes (hosts, sorted
// and without repeats) the components before it may take first.
func Het(asked string, hosts []string) string {
	list := strings.Join(hosts, ",")
	if len(hosts) > 8 {
		list = strings.Join(hosts[:8], ",") + ",... (" + strconv.Itoa(len(hosts)) + " nodes)"
	}
	return "gpumem: you asked for " + asked + " in a heterogeneous job. Slurm starts its components in order, " +
		"each on nodes of its own chosen without regard to the components after it, and the components before this one may take " +
		"the nodes that can hold it (" + list + "), so the job might never start. Put this component first, keep the ones before it " +
		"off those nodes (--exclude) or to one partition each (-p), or ask for a size more nodes hold"
}

// --- A change to a pending job ---------------------------------------------------------

// KeepGRES: the forms that serve a pending job's new size (serving) all change the GRES
// name of what it holds (held), which this Slurm refuses.
func KeepGRES(asked string, serving []string, held string) string {
	return "gpumem: you asked to change the job to " + asked + ", which needs " + strings.Join(serving, " or ") +
		"; the job holds " + held + " and this Slurm cannot change a pending job's GRES between shards and GPUs (whole or MIG). " +
		"Ask for a size the job's kind of GRES holds, or cancel the job and submit it again with " + asked
}

// HeldNowhere: the native GRES a pending job holds (held) runs on no node its new
// partitions (cands) and shape (Shape) leave it; it runs in elsewhere.
func HeldNowhere(held string, cands []string, shape string, elsewhere []string) string {
	msg := "gpumem: the job holds " + held + " (its GPU memory request as translated at submit), which no node it may use in partition " +
		strings.Join(cands, ",") + " has"
	if shape != "" {
		msg += " under " + shape
	}
	msg += ", so it would never start there"
	if len(elsewhere) > 0 {
		msg += "; it runs in partition " + strings.Join(elsewhere, ", ")
	}
	return msg + ". To move it, cancel it and submit it again with --gres=gpu:mem:SIZE and the new partition or nodes"
}

const again = "cancel the job and submit it again with the new --gres=gpu:mem"

// ChangeNotOneJob: a new gpu:mem for an update that names no single plain job id.
func ChangeNotOneJob() string {
	return "gpumem: a pending job's GPU memory is changed one job at a time, named by its plain job id " +
		"(scontrol update jobid=1234 gres=gpu:mem:SIZE, with the JobId that scontrol show job prints), " +
		"not an array task, a heterogeneous job's component, a list or a job name; name the job by that id, or " + again
}

// ChangeNoLayout: a new gpu:mem for a job on a Slurm release whose job records this
// build cannot read.
func ChangeNoLayout() string {
	return "gpumem: this installation cannot check a change of GPU memory against a pending job on this Slurm release " +
		"(the administrator can rebuild gpumem's job_submit plugin for it); " + again
}

// ChangeUnread: a new gpu:mem for a job whose record could not be read.
func ChangeUnread() string {
	return "gpumem: the job could not be read to check a change of its GPU memory; " + again
}

// --- A request gpumem cannot read or accept as written --------------------------------

// MemNotPerGPU: gpu:mem given in an option other than --gres or --gpus (option=value).
func MemNotPerGPU(option, value string) string {
	return option + "=" + value + " is not supported: GPU memory is asked per GPU with --gres=gpu:mem:20g, and the number of GPUs with --gpus-per-node, --gpus-per-task or --gpus"
}

// MemTwice: gpu:mem given more than once.
func MemTwice() string {
	return "ask for GPU memory once: --gres=gpu:mem:20g (memory per GPU), with --gpus-per-node=N, --gpus-per-task=N or --gpus=N for more than one GPU"
}

// SocketCount: a GPU count per socket (option=value) beside gpu:mem.
func SocketCount(option, value string) string {
	return option + "=" + value + " cannot be combined with --gres=gpu:mem: gpumem does not place GPUs by socket; give the GPU count with --gpus-per-node=N, --gpus-per-task=N or --gpus=N"
}

// CountTwice: the GPU count given more than once beside gpu:mem.
func CountTwice() string {
	return "give the number of GPUs once (--gpus-per-node=N, --gpus-per-task=N or --gpus=N) next to --gres=gpu:mem:20g"
}

// PerTaskTooMany: --gpus-per-task=value times tasks is more than max GPUs.
func PerTaskTooMany(value string, tasks uint32, max int64) string {
	return "--gpus-per-task=" + value + " for " + strconv.FormatUint(uint64(tasks), 10) + " tasks asks for more than " + strconv.FormatInt(max, 10) + " GPUs"
}

// SliceTwice: gpu:mem:size beside a native slice of a GPU (--gres=body).
func SliceTwice(size, body string) string {
	return "--gres=gpu:mem:" + size + " cannot be combined with --gres=" + body + ": both ask for a slice of a GPU; keep only --gres=gpu:mem:SIZE (gpumem picks the slice), or only --gres=" + body
}

// HostList: a host list (option=value) that cannot be read, for why.
func HostList(option, value string, why error) string {
	return "gpumem cannot read " + option + "=" + clip.String(value, clip.List) + ": " + why.Error()
}

// Entry: one GRES entry (token, given in option) that cannot be read: why, and a valid
// example. The whys and examples are the Entry* constants below.
func Entry(option, token, why, valid string) string {
	return option + " entry " + strconv.Quote(token) + " " + why + "; e.g. " + valid
}

// Why and a valid example, for Entry.
const (
	EntryOneSize      = "needs exactly one size after gpu:mem"
	EntryOneSizeValid = "gpu:mem:20g, with --gpus-per-node=2 for two such GPUs"
	EntryBadSize      = "has a bad size: " // followed by the size's own why
	EntrySizeValid    = "gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t"
	EntryTooManyParts = "has too many ':' parts"
	EntryBadType      = "has an empty or malformed GPU type"
	EntryTypeValid    = "gpu:h100:2"
	EntryTooManyGPUs  = "asks for more than 1048576 GPUs"
	EntryNotWhole     = "has a GPU count that is not a whole number"
	EntryCountValid   = "gpu:2"
	EntryZeroGPUs     = "asks for zero GPUs"
	EntryOneGPUValid  = "gpu:1"
)

// Size: a GPU memory size (token) that cannot be read, and why (the size grammar's own
// words, internal/units, with SizeAtLeast after a zero or negative size).
func Size(token, why string) string {
	return "GPU memory size " + strconv.Quote(token) + " " + why + "; e.g. gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t"
}

// SizeAtLeast follows a zero or negative size's why: what the smallest request is.
const SizeAtLeast = ": GPU memory is asked for as a positive size, at least 1m (1 MiB)"

// Array: an --array value that cannot be read, and why (the Array* functions).
func Array(value, why string) string {
	return "--array=" + value + " " + why + "; e.g. --array=0-9 or --array=0-99%10"
}

// ArrayNotIndex, ArrayNotRange, ArrayBadStep: what is wrong with one part of --array.
func ArrayNotIndex(part string) string {
	return "has " + strconv.Quote(part) + ", which is not an index or a range like 0-9"
}
func ArrayNotRange(part string) string {
	return "has " + strconv.Quote(part) + ", which is not a range like 0-9"
}
func ArrayBadStep(part string) string {
	return "has " + strconv.Quote(part) + ", whose step is not a positive number"
}

// Why an --array value is refused as a whole.
const (
	ArrayTooMany     = "has more tasks than Slurm runs"
	ArrayBadThrottle = "has a throttle that is not a number"
)

// GresRepeated: --gres given n times where (" in ...", or "" for the command line),
// one of them gpu:mem, of which the client keeps only the last; named are the first
// values, and more how many are not named.
func GresRepeated(n int, where string, named []string, more int) string {
	given := make([]string, len(named))
	for i, v := range named {
		given[i] = "--gres=" + v
	}
	rest := ""
	if more > 0 {
		rest = " ... " + strconv.Itoa(more) + " more"
	}
	return "gpumem: you gave --gres " + strconv.Itoa(n) + " times" + where + " (" + strings.Join(given, " ") + rest +
		"), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=" + strings.Join(named, ",") + rest
}

// InScript is GresRepeated's where for a batch script's #SBATCH lines (numbers, first
// to last, without repeats; more: there are lines not named).
func InScript(lines []string, more bool) string {
	named := "line " + lines[0]
	if last := len(lines) - 1; last > 0 {
		named = "lines " + strings.Join(lines[:last], ", ") + " and " + lines[last]
	}
	if more {
		named += " and more"
	}
	return " in the script's #SBATCH " + named
}

// ScriptHeadTooLong: a gpu:mem job's script whose #SBATCH head runs past the bytes
// gpumem reads (read, in words).
func ScriptHeadTooLong(read string) string {
	return "gpumem: the #SBATCH lines at the head of this batch script (up to its first command) run past its first " +
		read + ", more than gpumem reads; put the #SBATCH lines first and keep them, with the comments among them, within that"
}

// --- gpumem cannot decide ------------------------------------------------------------

// Unavailable: gpumem cannot decide gpu:mem jobs now, for reason.
func Unavailable(reason string) string {
	return "gpumem cannot place GPU memory requests right now (" + reason + "); please try again later or tell your administrator"
}

// NotLoaded is Unavailable's reason before the inventory at path is first loaded.
func NotLoaded(path string) error { return fmt.Errorf("the inventory %s is not loaded yet", path) }

// Internal is Unavailable's reason after a panic (recovered, r).
func Internal(r any) error { return fmt.Errorf("internal error: %v", r) }

// InReservation follows a refusal of a job in a reservation: the nodes it may use.
func InReservation(name, nodes string) string {
	return " (the job may use only the nodes of reservation " + name + ": " + clip.String(nodes, clip.List) + ")"
}

// --- A job step inside an allocation --------------------------------------------------

// StepJobUnreadable: the GRES job jobID holds (held) cannot be read.
func StepJobUnreadable(jobID uint32, held string, err error) error {
	return fmt.Errorf("job %d: its GRES %q cannot be read: %w", jobID, held, err)
}

// StepGPUsOfSlice: a step asks for gpus GPUs of a job that holds a slice of one (gres).
func StepGPUsOfSlice(jobID uint32, gres string, gpus int64) error {
	return fmt.Errorf("job %d holds a memory slice of one GPU (%s); a step cannot ask for %d GPUs", jobID, gres, gpus)
}

// StepMoreThanSlice: a step asks for more memory (mib) than its job's slice (hasMiB, gres).
func StepMoreThanSlice(mib int64, jobID uint32, hasMiB int64, gres string) error {
	return fmt.Errorf("step asks for %s of GPU memory but job %d holds %s (%s)", units.GiB(mib), jobID, units.GiB(hasMiB), gres)
}

// StepMoreGPUs: a step asks for more GPUs than its job holds.
func StepMoreGPUs(gpus int64, jobID uint32, held int64) error {
	return fmt.Errorf("step asks for %d GPUs but job %d holds %d", gpus, jobID, held)
}

// StepMorePerGPU: a step asks for more memory per GPU (mib) than its job's GPUs have
// (hasMiB, gres).
func StepMorePerGPU(mib int64, jobID uint32, hasMiB int64, gres string) error {
	return fmt.Errorf("step asks for %s of GPU memory per GPU but job %d holds %s per GPU (%s)", units.GiB(mib), jobID, units.GiB(hasMiB), gres)
}

// StepNoMemory: the job holds no GPU memory a step could take (its GRES: held).
func StepNoMemory(jobID uint32, held string) error {
	return fmt.Errorf("job %d holds no GPU memory to give this step (its GRES: %q); ask for --gres=gpu:mem:SIZE when you submit the job", jobID, held)
}
