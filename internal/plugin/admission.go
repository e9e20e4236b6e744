package plugin

import (
	"strings"

	"github.com/gpumem/gpumem/internal/admit"
)

// jobOf is the job as admission reads it: its GRES strings, partitions and shape.
func jobOf(f Fields) admit.Job {
	j := admit.Job{TresPerNode: f.PerNode, TresPerJob: f.PerJob, TresPerSocket: f.PerSocket, TresPerTask: f.PerTask,
		ReqNodes: f.ReqNodes, ExcNodes: f.ExcNodes, Features: f.Features, MinNodes: f.MinNodes,
		Array: f.ArrayInx, HetJob: f.HetJob, Keep: f.Keep}
	if f.Partition != "" {
		j.Partitions = strings.Split(f.Partition, ",")
	}
	return j
}
