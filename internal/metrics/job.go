package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// jobCollector reports what each Slurm job uses against what it was given. Every job
// series carries the job's user, account and partition as Slurm's record of the job
// has them (never anything the job set about itself), so usage can be summed by user or
// account, and jobid as hpc_job on the GPU series. Hostname (the Slurm node name, as on
// the GPU series) and, on the per-GPU series, gpu and UUID are dcgm-exporter's labels, so
// a job's figures join a site's DCGM series without label_replace. The per-node job
// series have no UUID: a job may span GPUs, and one series names one.
type jobCollector struct {
	used, alloc, gpuUsed, over, actions *prometheus.Desc
}

var jobLabels = []string{"jobid", "user", "account", "partition", "Hostname"}

func newJobCollector() *jobCollector {
	return &jobCollector{
		used: prometheus.NewDesc(namespace+"_job_memory_used_bytes",
			"GPU memory held by the job's processes on this node.", jobLabels, nil),
		alloc: prometheus.NewDesc(namespace+"_job_memory_allocated_bytes",
			"GPU memory Slurm allocated to the job on this node; kind is shard, mig or gpu.", append(jobLabels, "kind"), nil),
		gpuUsed: prometheus.NewDesc(namespace+"_job_gpu_memory_used_bytes",
			"GPU memory held by the job's processes on one GPU.", append(jobLabels, "gpu", "UUID"), nil),
		over: prometheus.NewDesc(namespace+"_job_over_allocation",
			"1 when the job holds more GPU memory than it was allocated.", jobLabels, nil),
		actions: prometheus.NewDesc(namespace+"_enforcement_actions_total",
			"Actions taken on jobs over their allocation since gpumemd started (warn, kill).", []string{"action"}, nil),
	}
}

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.used, c.alloc, c.gpuUsed, c.over, c.actions} {
		ch <- d
	}
}

func (c *jobCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	for _, a := range []string{"warn", "kill"} {
		ch <- prometheus.MustNewConstMetric(c.actions, prometheus.CounterValue, float64(st.Actions[a]), a)
	}
	uuids := map[int]string{}
	for _, g := range st.Snapshot.GPUs {
		uuids[g.Index] = g.UUID
	}
	for _, j := range st.Jobs {
		l := jobLabelValues(st, j.ID, j.Meta)
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(j.Used), l...)
		ch <- prometheus.MustNewConstMetric(c.alloc, prometheus.GaugeValue, float64(j.Alloc), append(l, j.Kind)...)
		over := 0.0
		if j.Over() {
			over = 1
		}
		ch <- prometheus.MustNewConstMetric(c.over, prometheus.GaugeValue, over, l...)
		for _, g := range j.GPUs {
			ch <- prometheus.MustNewConstMetric(c.gpuUsed, prometheus.GaugeValue, float64(g.Used), append(l, strconv.Itoa(g.GPU), uuids[g.GPU])...)
		}
	}
	return nil
}

// jobLabelValues are the values of jobLabels for one job on this node.
func jobLabelValues(st *State, id string, m slurmcli.Meta) []string {
	return []string{id, m.User, m.Account, m.Partition, st.Node}
}
