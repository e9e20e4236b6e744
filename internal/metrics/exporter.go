// Package metrics exposes a node's GPUs, jobs and the sidecar itself to Prometheus. As in
// node_exporter, each concern is one small collector; unlike it, no collector talks to
// the hardware at scrape time: they all read the State of the last poll, so a scrape is
// cheap, never blocks on NVML, and two scrapes of one poll agree.
package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/collectors"
	"github.com/gpumem/gpumem/internal/health"
	"github.com/gpumem/gpumem/internal/usage"
)

const namespace = "gpumem"

// State is what one poll learned; the daemon builds a fresh one per poll and never
// changes it after Set.
type State struct {
	Node         string // the Slurm node name, the Hostname label of GPU series
	Polled       bool   // at least one poll has run
	SampleErr    error
	Snapshot     usage.Snapshot
	Jobs         []usage.Job
	Idle         []usage.IdleJob   // jobs holding GPU memory here that they leave idle
	IdleActions  map[string]uint64 // idle policy action -> count since start
	Unattributed map[int]uint64    // GPU index -> bytes of processes of no Slurm job
	Health       health.Status
	XIDs         map[[2]int]uint64 // (GPU, XID) -> events since start
	Actions      map[string]uint64 // enforcement action kind -> count since start
	Polls        uint64
	PollErrors   map[string]uint64 // stage -> failed polls since start
	PollDuration time.Duration
	// UnknownAllocJobs counts the jobs Slurm runs here whose allocation could not be
	// read from Slurm (measured, never acted on); AllocQueryErrors the failed questions
	// to Slurm.
	UnknownAllocJobs, AllocQueryErrors uint64
	// Orphans, UnknownSizes and Strays count, since start, processes left by ended
	// jobs, processes of a size NVML did not give, and jobs holding memory on a GPU
	// Slurm did not give them (internal/usage's Owners).
	Orphans, UnknownSizes, Strays uint64
	Unit                          uint64   // bytes of one shard
	FragSizes                     []uint64 // request sizes, in bytes, that fragmentation is measured against
	// What gpumemd could not do while it kept running (faultCollector).
	DutyUp          map[string]bool   // duty -> it works now
	DutyFailures    map[string]uint64 // duty -> failed attempts since start
	HistorySetAside uint64            // damaged history files renamed aside since start
	WarningsDropped uint64            // warnings to jobs dropped on a full queue since start
	// Fences is each full GPU's memory fence by NVML index (inventory.FenceDriver, ...),
	// as gpumemd found it; a GPU without one reads as none, a MIG GPU as hardware.
	Fences map[int]string
	// FenceBackend is how the driver holds a per-cgroup limit on this node: dmem (the
	// kernel's controller) or misc (the driver's own); the backend label of a GPU that
	// holds the driver fence.
	FenceBackend string
}

// Exporter is the prometheus.Collector of all gpumem metrics.
type Exporter struct {
	mu         sync.RWMutex
	st         *State
	collectors *collectors.Set[*State]
}

// NewExporter builds the exporter with every collector.
func NewExporter() *Exporter {
	return &Exporter{
		st: &State{},
		collectors: collectors.New(namespace+"_scrape", collectors.Help{
			Success:  "Whether a collector succeeded (1) or failed (0) in this scrape.",
			Duration: "Time a collector took in this scrape.",
		}, map[string]collectors.Collector[*State]{
			"gpu":     newGPUCollector(),
			"job":     newJobCollector(),
			"node":    newNodeCollector(),
			"sidecar": newSidecarCollector(),
			"idle":    newIdleCollector(),
			"faults":  newFaultCollector(),
		}),
	}
}

// Set publishes a poll's state to the next scrapes.
func (e *Exporter) Set(st *State) {
	e.mu.Lock()
	e.st = st
	e.mu.Unlock()
}

// State returns the state the next scrape reads; callers must not change it.
func (e *Exporter) State() *State {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.st
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) { e.collectors.Describe(ch) }

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) { e.collectors.Collect(e.State(), true, ch) }

// jobsByGPU lists the jobs on each GPU index, in job order.
func (st *State) jobsByGPU() map[int][]string {
	out := map[int][]string{}
	for _, j := range st.Jobs {
		for _, g := range j.GPUs {
			out[g.GPU] = append(out[g.GPU], j.ID)
		}
	}
	for _, j := range st.Idle {
		for _, g := range j.GPUs {
			if !slices.Contains(out[g], j.ID) {
				out[g] = append(out[g], j.ID)
			}
		}
	}
	return out
}

// allocByGPU sums the jobs' allocations per GPU index.
func (st *State) allocByGPU() map[int]uint64 {
	alloc := map[int]uint64{}
	for _, j := range st.Jobs {
		for _, g := range j.GPUs {
			alloc[g.GPU] += g.Alloc
		}
	}
	// Jobs without a GPU process hold their allocation all the same.
	for _, j := range st.Idle {
		if st.running(j.ID) {
			continue
		}
		for _, g := range j.GPUs {
			alloc[g] += j.Alloc / uint64(len(j.GPUs))
		}
	}
	return alloc
}

// running reports whether job has processes on the GPUs this poll.
func (st *State) running(job string) bool {
	for _, j := range st.Jobs {
		if j.ID == job {
			return true
		}
	}
	return false
}
