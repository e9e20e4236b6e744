package metrics

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/inventory"
)

// gpuCollector reports each physical GPU. Names and meanings follow dcgm-exporter where
// users already chart them (DCGM_FI_DEV_FB_USED and friends), in Prometheus units:
// bytes, watts, ratios.
//
// The labels are dcgm-exporter's own, so a site's DCGM series and these join on them
// without label_replace: gpu (the NVML index), UUID, modelName, Hostname (the Slurm
// node name, which is the short host name unless a site says otherwise) and hpc_job,
// the job the GPU serves. dcgm-exporter repeats a GPU's series once per job; here a
// GPU shared by several jobs carries their ids joined by commas in one series, so
// sums over GPUs stay right, and a GPU that serves no job has no hpc_job.
type gpuCollector struct {
	total, used, free, alloc, unattributed, temp, power, util, mig, xid *prometheus.Desc
	fence                                                               *prometheus.Desc
	instances                                                           migDescs
}

var gpuLabels = []string{"gpu", "UUID", "modelName", "Hostname", "hpc_job"}

func gpuDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_gpu_"+name, help, gpuLabels, nil)
}

func newGPUCollector() *gpuCollector {
	return &gpuCollector{
		total:        gpuDesc("memory_total_bytes", "GPU memory in total (NVML; DCGM_FI_DEV_FB_TOTAL in MiB)."),
		used:         gpuDesc("memory_used_bytes", "GPU memory in use by anything (NVML; DCGM_FI_DEV_FB_USED in MiB)."),
		free:         gpuDesc("memory_free_bytes", "GPU memory not in use (NVML; DCGM_FI_DEV_FB_FREE in MiB)."),
		alloc:        gpuDesc("memory_allocated_bytes", "GPU memory Slurm allocated to the jobs running on this GPU (shards x unit, MIG instances, whole GPUs)."),
		unattributed: gpuDesc("memory_unattributed_bytes", "GPU memory held by processes of no Slurm job."),
		temp:         gpuDesc("temperature_celsius", "GPU temperature (DCGM_FI_DEV_GPU_TEMP)."),
		power:        gpuDesc("power_watts", "GPU power draw (DCGM_FI_DEV_POWER_USAGE)."),
		util:         gpuDesc("utilization_ratio", "Fraction of the last sample period the GPU was busy, 0-1 (DCGM_FI_DEV_GPU_UTIL / 100)."),
		mig:          gpuDesc("mig_instances", "MIG GPU instances on this GPU; 0 outside MIG mode."),
		// An info series, without hpc_job: which fence holds does not change with the jobs,
		// and a series per job set would come and go with every job.
		fence: prometheus.NewDesc(namespace+"_gpu_fence", "1 for the memory fence that holds a job to its slice on this GPU: hardware (MIG), driver (NVML per-cgroup limit), mps (MPS limit set by root) or none (only gpumemd's kill); backend is how the driver holds its limit (dmem or misc), empty for other fences.",
			[]string{"gpu", "UUID", "modelName", "Hostname", "fence", "backend"}, nil),
		xid: prometheus.NewDesc(namespace+"_gpu_xid_errors_total", "XID error events since gpumemd started, by XID (DCGM_FI_DEV_XID_ERRORS holds only the last XID).",
			[]string{"gpu", "Hostname", "xid"}, nil),
		instances: newMIGDescs(),
	}
}

func (c *gpuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.used, c.free, c.alloc, c.unattributed, c.temp, c.power, c.util, c.mig, c.fence, c.xid, c.instances.total, c.instances.used} {
		ch <- d
	}
}

var errNoPoll = errors.New("no successful NVML poll yet")

func (c *gpuCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	for k, n := range st.XIDs {
		ch <- prometheus.MustNewConstMetric(c.xid, prometheus.CounterValue, float64(n), strconv.Itoa(k[0]), st.Node, strconv.Itoa(k[1]))
	}
	if !st.Polled || st.SampleErr != nil {
		return errNoPoll
	}
	alloc := st.allocByGPU()
	jobs := st.jobsByGPU()
	var failed bool
	for _, g := range st.Snapshot.GPUs {
		if g.Err != nil {
			failed = true
			continue
		}
		l := []string{strconv.Itoa(g.Index), g.UUID, g.Name, st.Node, strings.Join(jobs[g.Index], ",")}
		gauge(ch, c.total, float64(g.Total), l)
		gauge(ch, c.used, float64(g.Used), l)
		gauge(ch, c.free, float64(g.Free), l)
		gauge(ch, c.alloc, float64(alloc[g.Index]), l)
		gauge(ch, c.unattributed, float64(st.Unattributed[g.Index]), l)
		gauge(ch, c.temp, g.TempC, l)
		gauge(ch, c.power, g.PowerW, l)
		gauge(ch, c.util, g.UtilPct/100, l)
		gauge(ch, c.mig, float64(len(g.Instances)), l)
		c.instances.collect(ch, g, st.Node)
		fence := inventory.GPU{MIG: g.MIG, Fence: st.Fences[g.Index]}.FenceOf()
		backend := ""
		if fence == inventory.FenceDriver {
			backend = st.FenceBackend
		}
		gauge(ch, c.fence, 1, []string{l[0], l[1], l[2], l[3], fence, backend})
	}
	if failed {
		return errors.New("a GPU did not answer")
	}
	return nil
}

// gauge sends v unless NVML did not report it (NaN): a missing series is honest, a
// zero temperature is not.
func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels []string) {
	if math.IsNaN(v) {
		return
	}
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
