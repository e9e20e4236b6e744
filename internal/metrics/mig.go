package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/usage"
)

// migLabels are dcgm-exporter's for a MIG instance's series: its GPU's labels, with
// GPU_I_ID (the GPU instance id) and GPU_I_PROFILE (its profile, 1g.10gb), so these join
// DCGM's per-instance series as they are. UUID is the GPU's, as in dcgm-exporter.
var migLabels = []string{"gpu", "UUID", "modelName", "Hostname", "GPU_I_ID", "GPU_I_PROFILE"}

// migDescs are the per-instance series the GPU collector adds for a GPU in MIG mode.
type migDescs struct{ total, used *prometheus.Desc }

func newMIGDescs() migDescs {
	return migDescs{
		total: prometheus.NewDesc(namespace+"_mig_memory_total_bytes",
			"GPU memory of the MIG instance, as NVML states its profile's (DCGM_FI_DEV_FB_TOTAL of the instance, in MiB).", migLabels, nil),
		used: prometheus.NewDesc(namespace+"_mig_memory_used_bytes",
			"GPU memory held by the compute processes on the MIG instance whose size NVML reported.", migLabels, nil),
	}
}

// collect sends each instance of g, from the poll: the total its profile gives and the
// processes' memory NVML reported there.
func (d migDescs) collect(ch chan<- prometheus.Metric, g usage.GPU, node string) {
	used := map[int]uint64{}
	for _, p := range g.Procs {
		used[p.GI] += p.Used // 0 for a process of unknown size
	}
	for _, in := range g.Instances {
		l := []string{strconv.Itoa(g.Index), g.UUID, g.Name, node, strconv.Itoa(in.GI), in.Profile}
		gauge(ch, d.total, float64(in.Total), l)
		gauge(ch, d.used, float64(used[in.GI]), l)
	}
}
