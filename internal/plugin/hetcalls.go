package plugin

import (
	"sync"
	"time"
)

// job_submit sees a heterogeneous job's components one at a time, each on its own; yet
// each must be decided knowing where the components before it may run (Slurm gives each
// component nodes of its own), or two components only one node can hold are both
// accepted and the job pends for ever. cli_filter decides them in order in one process
// (Plugin.het), but a job from slurmrestd, a libslurm program or a client without
// gpumem reaches job_submit untranslated. slurmctld checks a hetjob's components in one
// request, one after the other with offsets 0, 1, ... on the thread serving it, before
// that thread serves anything else: so the components before this one are those its
// thread submitted since its last offset 0.

// hetCalls holds, per slurmctld thread, the hosts of the hetjob components it has
// submitted since its last first component.
type hetCalls struct {
	mu    sync.Mutex
	by    map[int64]*hetCall
	swept int // records kept by the last sweep
}

type hetCall struct {
	next  uint32     // the offset expected next
	hosts [][]string // the hosts of the components so far
	at    time.Time  // when the last one came
}

// hetCallTTL bounds how long a thread's record is trusted (one request's components
// come within milliseconds) and kept (threads come and go).
const hetCallTTL = 10 * time.Second

// siblings is the hosts of the components thread caller submitted before offset off of
// the same job; nil for a first component or when the ones before are not known.
func (h *hetCalls) siblings(caller int64, off uint32, now time.Time) [][]string {
	if off == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.by[caller]
	if c == nil || c.next != off || now.Sub(c.at) > hetCallTTL {
		return nil
	}
	return append([][]string(nil), c.hosts...)
}

// record adds the hosts of component off, submitted by thread caller.
func (h *hetCalls) record(caller int64, off uint32, hosts [][]string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[int64]*hetCall{}
	}
	c := h.by[caller]
	switch {
	case off == 0:
		c = &hetCall{}
		h.by[caller] = c
	case c == nil || c.next != off:
		delete(h.by, caller) // a component whose predecessors were not seen
		return
	}
	c.next, c.at = off+1, now
	c.hosts = append(c.hosts, hosts...)
	// Threads that went away: swept once the records have doubled since the last sweep,
	// so that a flood of hetjobs from many connections costs each call O(1) on average.
	if len(h.by) > max(64, 2*h.swept) {
		for k, v := range h.by {
			if now.Sub(v.at) > hetCallTTL {
				delete(h.by, k)
			}
		}
		h.swept = len(h.by)
	}
}

// followsHet says f is a hetjob component job_submit decides after the ones before it.
func (p *Plugin) followsHet(f Fields) bool { return f.HetJob && !p.client && f.Caller != 0 }

// submitHet is job_submit's submit for a hetjob component: decided after the
// components its thread submitted before it.
func (p *Plugin) submitHet(f Fields) Verdict {
	now := p.now()
	v, own := p.submitAfter(f, p.hetCalls.siblings(f.Caller, f.HetOffset, now), true)
	if v.Refusal == "" {
		p.hetCalls.record(f.Caller, f.HetOffset, own, now)
	}
	return v
}
