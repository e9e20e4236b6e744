package metrics

import "github.com/prometheus/client_golang/prometheus"

// sidecarCollector reports gpumemd's own health: whether the node is fit for jobs, what
// it did about it, and how its polls go.
type sidecarCollector struct {
	healthy, problems, drained, polls, errs, duration, unknownAlloc, allocErrs *prometheus.Desc
	orphans, unknownSizes, strays                                              *prometheus.Desc
}

func newSidecarCollector() *sidecarCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_sidecar_"+name, help, labels, nil)
	}
	return &sidecarCollector{
		healthy:      d("healthy", "1 when NVML answers, no GPU is lost and no critical XID is held."),
		problems:     d("health_problems", "Health problems found by the last poll."),
		drained:      d("node_drained", "1 while gpumemd holds the node drained in Slurm."),
		polls:        d("polls_total", "Polls since gpumemd started."),
		errs:         d("poll_errors_total", "Polls since start in which a stage failed (nvml, gres, health, history; panic: a poll that panicked and was survived).", "stage"),
		duration:     d("poll_duration_seconds", "Time the last poll took."),
		unknownAlloc: d("unknown_allocation_jobs_total", "Jobs since start that Slurm runs on this node but whose allocation could not be read from Slurm; they are measured and never acted on."),
		allocErrs:    d("allocation_query_errors_total", "Failed questions to Slurm (scontrol) for the jobs' allocations since start."),
		orphans:      d("orphan_processes_total", "GPU processes found since start that outlived their Slurm job; counted as no job's, never killed."),
		unknownSizes: d("unknown_size_processes_total", "GPU processes found since start whose memory NVML did not report (or reported past the GPU's total); counted as no size, never acted on."),
		strays:       d("stray_jobs_total", "Jobs found since start holding memory on a GPU Slurm did not give them (their own violation, per UsagePolicy)."),
	}
}

func (c *sidecarCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.healthy, c.problems, c.drained, c.polls, c.errs, c.duration, c.unknownAlloc, c.allocErrs, c.orphans, c.unknownSizes, c.strays} {
		ch <- d
	}
}

// Stages a poll runs, for poll_errors_total.
var Stages = []string{"nvml", "gres", "health", "history", "panic"}

func (c *sidecarCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, bool01(st.Polled && st.Health.Healthy))
	ch <- prometheus.MustNewConstMetric(c.problems, prometheus.GaugeValue, float64(len(st.Health.Problems)))
	ch <- prometheus.MustNewConstMetric(c.drained, prometheus.GaugeValue, bool01(st.Health.Drained))
	ch <- prometheus.MustNewConstMetric(c.polls, prometheus.CounterValue, float64(st.Polls))
	for _, s := range Stages {
		ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, float64(st.PollErrors[s]), s)
	}
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, st.PollDuration.Seconds())
	ch <- prometheus.MustNewConstMetric(c.unknownAlloc, prometheus.CounterValue, float64(st.UnknownAllocJobs))
	ch <- prometheus.MustNewConstMetric(c.allocErrs, prometheus.CounterValue, float64(st.AllocQueryErrors))
	ch <- prometheus.MustNewConstMetric(c.orphans, prometheus.CounterValue, float64(st.Orphans))
	ch <- prometheus.MustNewConstMetric(c.unknownSizes, prometheus.CounterValue, float64(st.UnknownSizes))
	ch <- prometheus.MustNewConstMetric(c.strays, prometheus.CounterValue, float64(st.Strays))
	return nil
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
