package plugin

import (
	"strings"

	"github.com/gpumem/gpumem/internal/admit"
)

// jobOf is the job as admission reads it: its GRES strings, partitions and shape.
func jobOf(f Fields) admit.Job {
	j := admit.Job{TresPerNode: f.PerNode, TresPerJob: f.PerJob, TresPerSocket: f.PerSocket, TresPerTask: f.PerTask,
		ReqNodes: f.ReqNodes, ExcNodes: f.ExcNodes, Features: f.Features, MinNodes: f.MinNodes,
		Array: f.ArrayInx, HetJob: f.HetJob, Keep: f.Keep, Tasks: tasksOf(f), GPUsOnly: gpusOnly(f)}
	if f.Partition != "" {
		j.Partitions = strings.Split(f.Partition, ",")
	}
	return j
}

// tasksOf is how many tasks the job runs: --ntasks, else --ntasks-per-node on each of its
// nodes (0: unset, one per node).
func tasksOf(f Fields) uint32 {
	if f.NTasks > 0 {
		return f.NTasks
	}
	return f.NTasksPerNode * max(f.MinNodes, 1)
}

// gpusOnly names the job's options that count GPUs as Slurm does, as the user typed
// them, for admission and its messages.
func gpusOnly(f Fields) string {
	var w []string
	if f.Exclusive {
		w = append(w, "--exclusive")
	}
	if strings.Contains(f.MemPerTRES, "gpu") {
		w = append(w, "--mem-per-gpu")
	}
	if strings.Contains(f.CPUsPerTRES, "gpu") {
		w = append(w, "--cpus-per-gpu")
	}
	if f.NTasksPerTRES > 0 {
		w = append(w, "--ntasks-per-gpu")
	}
	if strings.Contains(f.TRESFreq, "gpu") {
		w = append(w, "--gpu-freq")
	}
	return strings.Join(w, " ")
}
