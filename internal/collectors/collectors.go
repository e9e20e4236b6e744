// Package collectors is gpumem's one way to build a Prometheus collector out of small
// per-concern collectors, as node_exporter does: every collector reads one snapshot
// (gpumemd's last poll, the exporter's last cluster view) that was taken before the
// scrape, so a scrape never waits on NVML or Slurm, and each scrape reports per
// collector whether it succeeded and how long it took.
package collectors

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector is one concern's metrics, read from a snapshot of type S.
type Collector[S any] interface {
	Describe(ch chan<- *prometheus.Desc)
	// Collect sends the concern's metrics; an error marks it failed in this scrape.
	Collect(s S, ch chan<- prometheus.Metric) error
}

// Set is a named set of collectors with the success and duration series.
type Set[S any] struct {
	names             []string
	byName            map[string]Collector[S]
	success, duration *prometheus.Desc
}

// Help is the help text of a set's two scrape series.
type Help struct{ Success, Duration string }

// New builds a set; prefix names its two scrape series, PREFIX_collector_success and
// PREFIX_collector_duration_seconds, both labelled by collector.
func New[S any](prefix string, help Help, cs map[string]Collector[S]) *Set[S] {
	s := &Set[S]{byName: cs,
		success:  prometheus.NewDesc(prefix+"_collector_success", help.Success, []string{"collector"}, nil),
		duration: prometheus.NewDesc(prefix+"_collector_duration_seconds", help.Duration, []string{"collector"}, nil),
	}
	for n := range cs {
		s.names = append(s.names, n)
	}
	sort.Strings(s.names) // one order, scrape after scrape
	return s
}

// Describe sends every collector's descriptions and the set's own.
func (s *Set[S]) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.success
	ch <- s.duration
	for _, n := range s.names {
		s.byName[n].Describe(ch)
	}
}

// Collect runs every collector on snap. With have false there is no snapshot yet:
// no collector runs, and each reports failed.
func (s *Set[S]) Collect(snap S, have bool, ch chan<- prometheus.Metric) {
	for _, n := range s.names {
		start := time.Now()
		ok := 0.0
		if have && s.byName[n].Collect(snap, ch) == nil {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(s.duration, prometheus.GaugeValue, time.Since(start).Seconds(), n)
		ch <- prometheus.MustNewConstMetric(s.success, prometheus.GaugeValue, ok, n)
	}
}
