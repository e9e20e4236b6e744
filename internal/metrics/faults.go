package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// faultCollector reports what gpumemd could not do while it kept running: a duty that
// is down (its port taken, a history it cannot open, NVML that does not start), how
// often each failed, a damaged history it set aside, and warnings to jobs it dropped.
// gpumem_sidecar_healthy is about the node's GPUs; these are about gpumemd itself, so
// none of them drains the node.
type faultCollector struct {
	up, failures, setAside, dropped *prometheus.Desc
}

func newFaultCollector() *faultCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_sidecar_"+name, help, labels, nil)
	}
	return &faultCollector{
		up:       d("duty_up", "1 while gpumemd can do the duty (listen: serve /metrics and /api; nvml: read the GPUs; history: keep the job history), 0 while it retries; a duty that is off counts as up.", "duty"),
		failures: d("duty_failures_total", "Failed attempts at the duty since gpumemd started (a port held by another process, a history that cannot be opened, ...).", "duty"),
		setAside: d("history_set_aside_total", "Damaged history databases gpumemd renamed aside (PATH.corrupt-TIME) and replaced with a new one since it started."),
		dropped:  d("warnings_dropped_total", "Warnings to jobs (scontrol notify) dropped since start because the queue of warnings was full."),
	}
}

func (c *faultCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.failures, c.setAside, c.dropped} {
		ch <- d
	}
}

func (c *faultCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	duties := make([]string, 0, len(st.DutyUp))
	for d := range st.DutyUp {
		duties = append(duties, d)
	}
	slices.Sort(duties)
	for _, d := range duties {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, bool01(st.DutyUp[d]), d)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(st.DutyFailures[d]), d)
	}
	ch <- prometheus.MustNewConstMetric(c.setAside, prometheus.CounterValue, float64(st.HistorySetAside))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.WarningsDropped))
	return nil
}
