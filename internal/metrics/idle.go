package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// idleCollector reports the jobs that hold GPU memory on this node and leave it idle,
// and what the idle policy did about them.
type idleCollector struct {
	seconds, jobs, bytes, actions *prometheus.Desc
}

// IdleActions are the idle policy's action kinds, for idle_actions_total.
var IdleActions = []string{"warn", "requeue", "cancel", "failed"}

func newIdleCollector() *idleCollector {
	return &idleCollector{
		seconds: prometheus.NewDesc(namespace+"_job_idle_seconds",
			"How long the job has held GPU memory on this node with no GPU process (or under the utilisation threshold); exempt says why no policy acts on it (empty when one may).",
			append(jobLabels, "exempt"), nil),
		jobs:  prometheus.NewDesc(namespace+"_node_idle_jobs", "Jobs holding GPU memory on this node that they leave idle.", nil, nil),
		bytes: prometheus.NewDesc(namespace+"_node_idle_memory_bytes", "GPU memory Slurm allocated to jobs that leave it idle.", nil, nil),
		actions: prometheus.NewDesc(namespace+"_idle_actions_total",
			"What the idle policy did since gpumemd started: warn, requeue, cancel, or failed (the action could not be taken).", []string{"action"}, nil),
	}
}

func (c *idleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.seconds, c.jobs, c.bytes, c.actions} {
		ch <- d
	}
}

func (c *idleCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	for _, a := range IdleActions {
		ch <- prometheus.MustNewConstMetric(c.actions, prometheus.CounterValue, float64(st.IdleActions[a]), a)
	}
	if !st.Polled || st.SampleErr != nil {
		return errNoPoll
	}
	var bytes uint64
	for _, j := range st.Idle {
		bytes += j.Alloc
		idleFor := st.Snapshot.Time.Sub(j.Since).Seconds()
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.GaugeValue, max(0, idleFor), append(jobLabelValues(st, j.ID, j.Meta), j.Exempt)...)
	}
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(len(st.Idle)))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(bytes))
	return nil
}
