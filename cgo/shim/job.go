package shim

/*
#include <stdlib.h>
#include <string.h>
#include "../include/gpumem_job.h"
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"syscall"
	"unsafe"

	"github.com/gpumem/gpumem/internal/plugin"
)

// prefilterHasMem is the shims' C prefilter on one string, for the test that it never
// says no where plugin.AsksMem says yes.
func prefilterHasMem(s string) bool {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return C.gpumem_has_mem(cs) != 0
}

// prefilterScript is the shim's C prefilter on a batch script, for the test that it
// never says no where plugin.ScriptRepeats would refuse.
func prefilterScript(s string, asksMem bool) bool {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	mem := C.int(0)
	if asksMem {
		mem = 1
	}
	return C.gpumem_script_to_go(cs, mem) != 0
}

// scriptMax is the C side's bound on what it reads of a script.
const scriptMax = C.GPUMEM_SCRIPT_MAX

// script is Go's copy of the batch script s (NULL: ""), no more of it than
// plugin.ScriptRepeats reads and one byte, which says there is more.
func script(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoStringN(s, C.int(C.strnlen(s, plugin.MaxScriptRead+1)))
}

// Decider is what job_submit does with one job's fields.
type Decider func(f plugin.Fields) plugin.Verdict

// Decide runs decide (pinned, for a new job the shim marked pin) on the job_submit
// fields of the struct gpumem_job at job and fills in its answer. It returns 1 when the
// job is refused.
func Decide(job unsafe.Pointer, decide, pinned Decider) int {
	j := (*C.struct_gpumem_job)(job)
	defer recoverInto(j)
	in := submitFields(j)
	if j.pin != 0 {
		decide = pinned
	}
	return answer(j, in, decide(in))
}

// Modifier is what job_modify does with a change (in) to a job that is now cur (nil:
// unknown, why says why); keep says Slurm refuses a change of GRES name (shard, gpu) for
// a pending job.
type Modifier func(in plugin.Fields, cur *plugin.Fields, keep bool, why plugin.Unread) plugin.Verdict

// Modify is Decide for job_modify: the change, and the job as it is when the shim could
// read it.
func Modify(job unsafe.Pointer, modify Modifier) int {
	j := (*C.struct_gpumem_job)(job)
	defer recoverInto(j)
	in := submitFields(j)
	var cur *plugin.Fields
	why := plugin.Read
	switch {
	case j.num[C.GPUMEM_JOB_KNOWN] != 0:
	case j.num[C.GPUMEM_JOB_LAYOUT] == 0:
		why = plugin.NoLayout
	case j.num[C.GPUMEM_JOB_NAMED] == 0:
		why = plugin.NotOneJob
	default:
		why = plugin.NotARecord
	}
	if why == plugin.Read {
		cur = &plugin.Fields{
			PerNode:   C.GoString(j.in[C.GPUMEM_JOB_PER_NODE]),
			PerJob:    C.GoString(j.in[C.GPUMEM_JOB_PER_JOB]),
			PerSocket: C.GoString(j.in[C.GPUMEM_JOB_PER_SOCKET]),
			PerTask:   C.GoString(j.in[C.GPUMEM_JOB_PER_TASK]),
			Partition: C.GoString(j.in[C.GPUMEM_JOB_PARTITION]),
			Features:  C.GoString(j.in[C.GPUMEM_JOB_FEATURES]),
			ReqNodes:  C.GoString(j.in[C.GPUMEM_JOB_REQ_NODES]),
			ExcNodes:  C.GoString(j.in[C.GPUMEM_JOB_EXC_NODES]),
			MinNodes:  uint32(j.num[C.GPUMEM_JOB_MIN_NODES]),
		}
	}
	return answer(j, in, modify(in, cur, j.num[C.GPUMEM_KEEP_GRES] != 0, why))
}

// submitFields reads job_submit's slots of j.
func submitFields(j *C.struct_gpumem_job) plugin.Fields {
	f := plugin.Fields{
		PerNode:   C.GoString(j.in[C.GPUMEM_PER_NODE]),
		PerJob:    C.GoString(j.in[C.GPUMEM_PER_JOB]),
		PerSocket: C.GoString(j.in[C.GPUMEM_PER_SOCKET]),
		PerTask:   C.GoString(j.in[C.GPUMEM_PER_TASK]),
		Partition: C.GoString(j.in[C.GPUMEM_PARTITION]),
		ReqNodes:  C.GoString(j.in[C.GPUMEM_REQ_NODES]),

		ExcNodes:      C.GoString(j.in[C.GPUMEM_EXC_NODES]),
		Features:      C.GoString(j.in[C.GPUMEM_FEATURES]),
		Reservation:   C.GoString(j.in[C.GPUMEM_RESERVATION]),
		ArrayInx:      C.GoString(j.in[C.GPUMEM_ARRAY_INX]),
		MinNodes:      uint32(j.num[C.GPUMEM_MIN_NODES]),
		MaxNodes:      uint32(j.num[C.GPUMEM_MAX_NODES]),
		NTasksPerNode: uint32(j.num[C.GPUMEM_NTASKS_PER_NODE]),
		NTasks:        uint32(j.num[C.GPUMEM_NUM_TASKS]),
		NTasksPerTRES: uint32(j.num[C.GPUMEM_NTASKS_PER_TRES]),
		Exclusive:     j.num[C.GPUMEM_EXCLUSIVE] != 0,
		MemPerTRES:    C.GoString(j.in[C.GPUMEM_MEM_PER_TRES]),
		CPUsPerTRES:   C.GoString(j.in[C.GPUMEM_CPUS_PER_TRES]),
		TRESFreq:      C.GoString(j.in[C.GPUMEM_TRES_FREQ]),
		HetJob:        j.num[C.GPUMEM_HET_JOB] != 0,
		Script:        script(j.in[C.GPUMEM_SCRIPT]),
	}
	if f.HetJob {
		f.HetOffset = uint32(j.num[C.GPUMEM_HET_JOB] - 1)
		// Go runs a C thread's call on that thread: this is slurmctld's thread. Asked
		// of hetjob components only: it is a system call.
		f.Caller = int64(syscall.Gettid())
	}
	return f
}

// answer fills in j's answer from v, the verdict on in; 1 when the job is refused.
func answer(j *C.struct_gpumem_job, in plugin.Fields, v plugin.Verdict) int {
	j.fresh_ns = C.int64_t(v.Fresh.Nanoseconds())
	if v.Refusal != "" {
		j.refusal = C.CString(v.Refusal)
		return 1
	}
	set(j, C.GPUMEM_PER_NODE, in.PerNode, v.Fields.PerNode)
	set(j, C.GPUMEM_PER_JOB, in.PerJob, v.Fields.PerJob)
	set(j, C.GPUMEM_PER_SOCKET, in.PerSocket, v.Fields.PerSocket)
	set(j, C.GPUMEM_PER_TASK, in.PerTask, v.Fields.PerTask)
	set(j, C.GPUMEM_PARTITION, in.Partition, v.Fields.Partition)
	set(j, C.GPUMEM_REQ_NODES, in.ReqNodes, v.Fields.ReqNodes)
	return 0
}

// set marks a field for the shim to replace only when it changed, so a job gpumem has
// no business with keeps Slurm's own strings byte for byte.
func set(j *C.struct_gpumem_job, i int, was, now string) {
	if was == now {
		return
	}
	j.changed[i] = 1
	if now != "" {
		j.out[i] = C.CString(now)
	}
}

// recoverInto logs a panic and clears any half-written answer, so the job goes on
// untouched: nothing Go does may take the Slurm program down.
func recoverInto(j *C.struct_gpumem_job) {
	r := recover()
	if r == nil {
		return
	}
	Sink{}.Error(fmt.Sprintf("gpumem: internal error, job left unchanged: %v\n%s", r, debug.Stack()))
	for i := range j.changed {
		j.changed[i] = 0
	}
	j.fresh_ns = 0
	C.free(unsafe.Pointer(j.refusal))
	j.refusal = nil
}

// OptionsDecider is what cli_filter does with a submission's options; jobID is the job a
// step runs in (0 for a new job) and job what that job holds.
type OptionsDecider func(o plugin.Options, jobID uint32, job plugin.Fields) (plugin.Options, string)

// DecideOptions is Decide for cli_filter's slots.
func DecideOptions(job unsafe.Pointer, decide OptionsDecider) int {
	j := (*C.struct_gpumem_job)(job)
	defer recoverInto(j)
	in := plugin.Options{
		Gres:          C.GoString(j.in[C.GPUMEM_OPT_GRES]),
		GPUs:          C.GoString(j.in[C.GPUMEM_OPT_GPUS]),
		GPUsPerNode:   C.GoString(j.in[C.GPUMEM_OPT_GPUS_PER_NODE]),
		GPUsPerSocket: C.GoString(j.in[C.GPUMEM_OPT_GPUS_PER_SOCKET]),
		GPUsPerTask:   C.GoString(j.in[C.GPUMEM_OPT_GPUS_PER_TASK]),
		Partition:     C.GoString(j.in[C.GPUMEM_OPT_PARTITION]),

		Nodes:         C.GoString(j.in[C.GPUMEM_OPT_NODES]),
		NodeList:      C.GoString(j.in[C.GPUMEM_OPT_NODELIST]),
		Exclude:       C.GoString(j.in[C.GPUMEM_OPT_EXCLUDE]),
		Constraint:    C.GoString(j.in[C.GPUMEM_OPT_CONSTRAINT]),
		Array:         C.GoString(j.in[C.GPUMEM_OPT_ARRAY]),
		Reservation:   C.GoString(j.in[C.GPUMEM_OPT_RESERVATION]),
		NTasksPerNode: C.GoString(j.in[C.GPUMEM_OPT_NTASKS_PER_NODE]),
		NTasks:        C.GoString(j.in[C.GPUMEM_OPT_NTASKS]),
		Exclusive:     C.GoString(j.in[C.GPUMEM_OPT_EXCLUSIVE]),
		MemPerGPU:     C.GoString(j.in[C.GPUMEM_OPT_MEM_PER_GPU]),
		CPUsPerGPU:    C.GoString(j.in[C.GPUMEM_OPT_CPUS_PER_GPU]),
		NTasksPerGPU:  C.GoString(j.in[C.GPUMEM_OPT_NTASKS_PER_GPU]),
		GPUFreq:       C.GoString(j.in[C.GPUMEM_OPT_GPU_FREQ]),
		TRESPerTask:   C.GoString(j.in[C.GPUMEM_OPT_TRES_PER_TASK]),
		HetOffset:     uint32(j.num[C.GPUMEM_HET_JOB]),
	}
	held := plugin.Fields{PerNode: C.GoString(j.in[C.GPUMEM_STEP_JOB_PER_NODE]), PerJob: C.GoString(j.in[C.GPUMEM_STEP_JOB_PER_JOB])}
	out, refusal := decide(in, uint32(j.job_id), held)
	if refusal != "" {
		j.refusal = C.CString(refusal)
		return 1
	}
	set(j, C.GPUMEM_OPT_GRES, in.Gres, out.Gres)
	set(j, C.GPUMEM_OPT_GPUS, in.GPUs, out.GPUs)
	set(j, C.GPUMEM_OPT_GPUS_PER_NODE, in.GPUsPerNode, out.GPUsPerNode)
	set(j, C.GPUMEM_OPT_GPUS_PER_SOCKET, in.GPUsPerSocket, out.GPUsPerSocket)
	set(j, C.GPUMEM_OPT_GPUS_PER_TASK, in.GPUsPerTask, out.GPUsPerTask)
	set(j, C.GPUMEM_OPT_TRES_PER_TASK, in.TRESPerTask, out.TRESPerTask)
	set(j, C.GPUMEM_OPT_PARTITION, in.Partition, out.Partition)
	return 0
}
