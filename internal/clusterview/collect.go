package clusterview

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/collectors"
	"github.com/gpumem/gpumem/internal/refusalcount"
)

const ns = "gpumem"

// Exporter is the prometheus.Collector of the cluster view.
type Exporter struct {
	mu               sync.RWMutex
	view             *View
	updated          time.Time
	errors           map[string]uint64
	collectors       *collectors.Set[*View] // one per concern; each reads the last View
	lastUpdate, errs *prometheus.Desc

	// refusals are job_submit's counts file as last read; nil when it could not be.
	refusals                         *refusalcount.State
	refusedJobs, refusedOK, refSince *prometheus.Desc
}

// NewExporter builds the exporter with every collector and no view yet.
func NewExporter() *Exporter {
	return &Exporter{
		errors: map[string]uint64{},
		collectors: collectors.New(ns+"_cluster_scrape", collectors.Help{
			Success:  "Whether a cluster collector succeeded (1) or had no view to report (0) in this scrape.",
			Duration: "Time a cluster collector took in this scrape.",
		}, map[string]collectors.Collector[*View]{
			"demand":        newDemand(),
			"wait":          newWait(),
			"reason":        newReason(),
			"fragmentation": newFrag(),
			"partition":     newPartition(),
		}),
		lastUpdate: prometheus.NewDesc(ns+"_cluster_last_update_timestamp_seconds",
			"When the cluster view was last read from Slurm and the inventory successfully.", nil, nil),
		errs: prometheus.NewDesc(ns+"_cluster_update_errors_total",
			"Failed readings of the cluster view, by what failed (slurm, inventory, compute).", []string{"source"}, nil),
		refusedJobs: prometheus.NewDesc(ns+"_refused_jobs_total",
			"GPU-memory jobs job_submit refused since slurmctld loaded it, by reason class (invalid_request, no_fit, gpumem_unavailable).", []string{"reason"}, nil),
		refusedOK: prometheus.NewDesc(ns+"_cluster_refusal_counts_readable",
			"Whether job_submit's refusal counts file (gpumem.conf RefusalCounts) was read at the last reading (1) or not (0: no gpumem_refused_jobs_total; the exporter's log says why).", nil, nil),
		refSince: prometheus.NewDesc(ns+"_refused_jobs_since_timestamp_seconds",
			"When job_submit started counting refusals (slurmctld's start or reconfigure): the counters restart from zero then.", nil, nil),
	}
}

// Sources a reading can fail at.
var Sources = []string{"slurm", "inventory", "compute"}

// Set publishes a new view.
func (e *Exporter) Set(v *View, at time.Time) {
	e.mu.Lock()
	e.view, e.updated = v, at
	e.mu.Unlock()
}

// SetRefusals publishes job_submit's refusal counts as last read; nil when the file
// could not be read, which leaves no refusal series rather than failing the scrape.
func (e *Exporter) SetRefusals(s *refusalcount.State) {
	e.mu.Lock()
	e.refusals = s
	e.mu.Unlock()
}

// Fail counts a failed reading; the last good view stays.
func (e *Exporter) Fail(source string) {
	e.mu.Lock()
	e.errors[source]++
	e.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	e.collectors.Describe(ch)
	ch <- e.lastUpdate
	ch <- e.errs
	ch <- e.refusedJobs
	ch <- e.refusedOK
	ch <- e.refSince
}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.RLock()
	v, at, ref := e.view, e.updated, e.refusals
	errs := make(map[string]uint64, len(e.errors))
	for k, n := range e.errors {
		errs[k] = n
	}
	e.mu.RUnlock()
	for _, s := range Sources {
		ch <- prometheus.MustNewConstMetric(e.errs, prometheus.CounterValue, float64(errs[s]), s)
	}
	gauge(ch, e.refusedOK, map[bool]float64{true: 1}[ref != nil])
	if ref != nil {
		for _, r := range refusalcount.Names() {
			ch <- prometheus.MustNewConstMetric(e.refusedJobs, prometheus.CounterValue, float64(ref.Refused[r]), r)
		}
		gauge(ch, e.refSince, float64(ref.Since.UnixNano())/1e9)
	}
	if v != nil {
		ch <- prometheus.MustNewConstMetric(e.lastUpdate, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
	}
	e.collectors.Collect(v, v != nil, ch)
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(ns+"_cluster_"+name, help, labels, nil)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// demand: what the pending gpu:mem jobs ask, by size class.
type demand struct{ jobs, bytes *prometheus.Desc }

func newDemand() *demand {
	return &demand{
		jobs:  desc("pending_jobs", "Pending GPU-memory jobs (shards, MIG instances, whole GPUs at their GiB equivalent), by size class (the request per node rounded up to a power of two GiB).", "size"),
		bytes: desc("pending_memory_bytes", "GPU memory the pending jobs ask for, by size class.", "size"),
	}
}

func (c *demand) Describe(ch chan<- *prometheus.Desc) { ch <- c.jobs; ch <- c.bytes }

func (c *demand) Collect(v *View, ch chan<- prometheus.Metric) error {
	for _, n := range v.ClassNames() {
		gauge(ch, c.jobs, float64(v.Classes[n].Jobs), n)
		gauge(ch, c.bytes, float64(v.Classes[n].Bytes), n)
	}
	return nil
}

// wait: how long the pending jobs of each size class have waited.
type wait struct{ oldest, mean *prometheus.Desc }

func newWait() *wait {
	return &wait{
		oldest: desc("pending_oldest_wait_seconds", "The longest wait of a pending GPU-memory job of the size class, since submission.", "size"),
		mean:   desc("pending_mean_wait_seconds", "The mean wait of the pending GPU-memory jobs of the size class, since submission.", "size"),
	}
}

func (c *wait) Describe(ch chan<- *prometheus.Desc) { ch <- c.oldest; ch <- c.mean }

func (c *wait) Collect(v *View, ch chan<- prometheus.Metric) error {
	for _, n := range v.ClassNames() {
		cl := v.Classes[n]
		if cl.WaitCounted == 0 {
			continue
		}
		gauge(ch, c.oldest, cl.OldestWait.Seconds(), n)
		gauge(ch, c.mean, cl.SumWait.Seconds()/float64(cl.WaitCounted), n)
	}
	return nil
}

// reason: why pending jobs wait, as Slurm says. A job job_submit refused never
// enters the queue: those are gpumem_refused_jobs_total, from job_submit's own counts.
type reason struct{ jobs *prometheus.Desc }

func newReason() *reason {
	return &reason{jobs: desc("pending_reason_jobs", "Pending jobs by Slurm's reason for their wait (Resources, Priority, ReqNodeNotAvail, ...).", "reason")}
}

func (c *reason) Describe(ch chan<- *prometheus.Desc) { ch <- c.jobs }

func (c *reason) Collect(v *View, ch chan<- prometheus.Metric) error {
	for r, n := range v.Reasons {
		gauge(ch, c.jobs, float64(n), r)
	}
	return nil
}

// frag: free GPU memory the pending sizes cannot use.
type frag struct{ free, stranded, ratio, blocked *prometheus.Desc }

func newFrag() *frag {
	return &frag{
		free:     desc("free_memory_bytes", "GPU memory of shareable GPUs that no running job holds, cluster-wide."),
		stranded: desc("stranded_memory_bytes", "Free GPU memory on GPUs where none of the pending sizes fits (else the configured sizes)."),
		ratio:    desc("fragmentation_ratio", "Stranded over free GPU memory, 0-1; 0 when nothing is free."),
		blocked:  desc("fragmentation_blocked_jobs", "Pending jobs whose partitions have the memory they ask for free in total but on no single GPU."),
	}
}

func (c *frag) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.free
	ch <- c.stranded
	ch <- c.ratio
	ch <- c.blocked
}

func (c *frag) Collect(v *View, ch chan<- prometheus.Metric) error {
	gauge(ch, c.free, float64(v.Free))
	gauge(ch, c.stranded, float64(v.Stranded))
	r := 0.0
	if v.Free > 0 {
		r = float64(v.Stranded) / float64(v.Free)
	}
	gauge(ch, c.ratio, r)
	gauge(ch, c.blocked, float64(v.Blocked))
	return nil
}

// partition: GPU memory allocated by Slurm per partition, against what it has. What
// the jobs use is the sidecars' gpumem_job_memory_used_bytes summed by partition.
type partition struct{ total, alloc *prometheus.Desc }

func newPartition() *partition {
	return &partition{
		total: prometheus.NewDesc(ns+"_partition_memory_total_bytes", "GPU memory of the partition's nodes, from the inventory.", []string{"partition"}, nil),
		alloc: prometheus.NewDesc(ns+"_partition_memory_allocated_bytes", "GPU memory Slurm allocated to the partition's running jobs (shards x unit, whole GPUs, MIG instances).", []string{"partition"}, nil),
	}
}

func (c *partition) Describe(ch chan<- *prometheus.Desc) { ch <- c.total; ch <- c.alloc }

func (c *partition) Collect(v *View, ch chan<- prometheus.Metric) error {
	for name, p := range v.Partitions {
		gauge(ch, c.total, float64(p.Total), name)
		gauge(ch, c.alloc, float64(p.Allocated), name)
	}
	return nil
}
