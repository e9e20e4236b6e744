package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// jobCollector reports what each Slurm job uses against what it was given.
type jobCollector struct {
	used, alloc, gpuUsed, over, actions *prometheus.Desc
}

func newJobCollector() *jobCollector {
	return &jobCollector{
		used: prometheus.NewDesc(namespace+"_job_memory_used_bytes",
			"GPU memory held by the job's processes on this node.", []string{"jobid"}, nil),
		alloc: prometheus.NewDesc(namespace+"_job_memory_allocated_bytes",
			"GPU memory Slurm allocated to the job on this node; kind is shard, mig or gpu.", []string{"jobid", "kind"}, nil),
		gpuUsed: prometheus.NewDesc(namespace+"_job_gpu_memory_used_bytes",
			"GPU memory held by the job's processes on one GPU.", []string{"jobid", "gpu"}, nil),
		over: prometheus.NewDesc(namespace+"_job_over_allocation",
			"1 when the job holds more GPU memory than it was allocated.", []string{"jobid"}, nil),
		actions: prometheus.NewDesc(namespace+"_enforcement_actions_total",
			"Actions taken on jobs over their allocation since gpumemd started (warn, kill).", []string{"action"}, nil),
	}
}

func (c *jobCollector) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.used, c.alloc, c.gpuUsed, c.over, c.actions} {
		ch <- d
	}
}

func (c *jobCollector) collect(st *State, ch chan<- prometheus.Metric) error {
	for _, a := range []string{"warn", "kill"} {
		ch <- prometheus.MustNewConstMetric(c.actions, prometheus.CounterValue, float64(st.Actions[a]), a)
	}
	for _, j := range st.Jobs {
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(j.Used), j.ID)
		ch <- prometheus.MustNewConstMetric(c.alloc, prometheus.GaugeValue, float64(j.Alloc), j.ID, j.Kind)
		over := 0.0
		if j.Over() {
			over = 1
		}
		ch <- prometheus.MustNewConstMetric(c.over, prometheus.GaugeValue, over, j.ID)
		for _, g := range j.GPUs {
			ch <- prometheus.MustNewConstMetric(c.gpuUsed, prometheus.GaugeValue, float64(g.Used), j.ID, strconv.Itoa(g.GPU))
		}
	}
	return nil
}
