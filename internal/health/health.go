// Package health decides whether a node's GPUs can take jobs, and tells Slurm: NVML
// failing, a GPU lost since start, or a critical XID drains the node through scontrol;
// with resume on, the node comes back once every problem is gone. Application XIDs (a
// job's own fault: 13, 31, 43, 45, ...) never drain anything.
package health

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/usage"
)

// CriticalXIDs are the XIDs that mean the GPU itself is broken or needs a reset
// (NVIDIA's XID catalogue): double-bit ECC (48), internal microcontroller faults
// (61, 62), row-remapping events (63, 64), NVLink (74), fallen off the bus (79),
// high single-bit ECC rate (92), contained/uncontained ECC (94, 95), GSP errors
// (119, 120) and fatal firmware errors (140).
func CriticalXIDs() map[int]bool {
	m := map[int]bool{}
	for _, x := range []int{48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140} {
		m[x] = true
	}
	return m
}

// Drainer is how the monitor talks to Slurm; Scontrol in production, a recorder in tests.
type Drainer interface {
	Drain(node, reason string) error
	Resume(node string) error
}

// ReasonReader is a Drainer that can also tell the node's current drain reason, so a
// restarted gpumemd recognises a drain of its own (reason "gpumem: ...") and can still
// resume it.
type ReasonReader interface {
	Reason(node string) (string, error)
}

// Monitor keeps the node's health from poll to poll.
type Monitor struct {
	Node     string
	Drainer  Drainer
	Drain    bool         // drain the node on a problem
	Resume   bool         // resume it when every problem is gone (only if this monitor drained it)
	Critical map[int]bool // XIDs that drain; CriticalXIDs() by default
	// XIDHold is how long a critical XID counts as a problem; 0 keeps it until the
	// daemon restarts, because most need a GPU reset that NVML cannot see happen.
	XIDHold time.Duration

	baseline map[string]int // UUID -> index of the GPUs seen at the first good poll
	xids     map[int]xidMark
	problems []string
	drained  bool
	adopted  bool // the drain state left by an earlier gpumemd has been looked at
	// XIDCounts counts every XID seen, critical or not, per GPU and XID.
	XIDCounts map[[2]int]uint64
}

type xidMark struct {
	xid int
	at  time.Time
}

// Status is the monitor's view after a poll.
type Status struct {
	Healthy  bool
	Problems []string
	Drained  bool // drained by this monitor and not yet resumed
}

// XID records an XID event on a GPU.
func (m *Monitor) XID(gpu, xid int, at time.Time) {
	if m.XIDCounts == nil {
		m.XIDCounts = map[[2]int]uint64{}
	}
	m.XIDCounts[[2]int{gpu, xid}]++
	crit := m.Critical
	if crit == nil {
		crit = CriticalXIDs()
	}
	if !crit[xid] {
		return
	}
	if m.xids == nil {
		m.xids = map[int]xidMark{}
	}
	m.xids[gpu] = xidMark{xid, at}
}

// Observe judges one poll (sampleErr is the poll's own failure) and drains or resumes
// the node. It returns the status and the error of a failed scontrol call, which is
// retried on the next poll.
func (m *Monitor) Observe(s usage.Snapshot, sampleErr error, now time.Time) (Status, error) {
	m.problems = m.problems[:0]
	if sampleErr != nil {
		m.problems = append(m.problems, "NVML failed: "+sampleErr.Error())
	} else {
		m.checkGPUs(s)
	}
	for gpu, x := range m.xids {
		if m.XIDHold > 0 && now.Sub(x.at) > m.XIDHold {
			delete(m.xids, gpu)
			continue
		}
		m.problems = append(m.problems, fmt.Sprintf("GPU %d XID %d", gpu, x.xid))
	}
	sort.Strings(m.problems)
	st := Status{Healthy: len(m.problems) == 0, Problems: append([]string(nil), m.problems...)}
	m.adopt()
	var err error
	switch {
	case !st.Healthy && m.Drain && !m.drained:
		if err = m.Drainer.Drain(m.Node, Reason(m.problems)); err == nil {
			m.drained = true
		}
	case st.Healthy && m.drained && m.Resume:
		if err = m.Drainer.Resume(m.Node); err == nil {
			m.drained = false
		}
	}
	st.Drained = m.drained
	return st, err
}

// adopt takes over a drain an earlier gpumemd left behind, once; without it, a node
// drained before a restart would stay drained after its GPUs recovered.
func (m *Monitor) adopt() {
	if m.adopted || !m.Resume {
		return
	}
	rr, ok := m.Drainer.(ReasonReader)
	if !ok {
		m.adopted = true
		return
	}
	reason, err := rr.Reason(m.Node)
	if err != nil {
		return // slurmctld unreachable: look again next poll
	}
	m.adopted = true
	if strings.HasPrefix(reason, reasonPrefix) {
		m.drained = true
	}
}

// checkGPUs compares the poll with the GPUs of the first good poll: a GPU that left, or
// that answers its handle but not its memory, is lost.
func (m *Monitor) checkGPUs(s usage.Snapshot) {
	if m.baseline == nil && allAnswer(s) {
		m.baseline = map[string]int{}
		for _, g := range s.GPUs {
			m.baseline[g.UUID] = g.Index
		}
	}
	present := map[string]bool{}
	for _, g := range s.GPUs {
		if g.Err != nil {
			m.problems = append(m.problems, fmt.Sprintf("GPU %d lost: %v", g.Index, g.Err))
			continue
		}
		present[g.UUID] = true
	}
	for uuid, idx := range m.baseline {
		if !present[uuid] && !failed(s, idx) {
			m.problems = append(m.problems, fmt.Sprintf("GPU %d (%s) lost: no longer listed by NVML", idx, uuid))
		}
	}
}

func allAnswer(s usage.Snapshot) bool {
	for _, g := range s.GPUs {
		if g.Err != nil {
			return false
		}
	}
	return true
}

func failed(s usage.Snapshot, idx int) bool {
	for _, g := range s.GPUs {
		if g.Index == idx && g.Err != nil {
			return true
		}
	}
	return false
}

// reasonPrefix marks gpumemd's drains, so an admin (and a later resume) can tell them
// from their own.
const reasonPrefix = "gpumem: "

// Reason is the drain reason Slurm shows, short enough for sinfo -R.
func Reason(problems []string) string {
	r := reasonPrefix + strings.Join(problems, "; ")
	if len(r) > 200 {
		r = r[:197] + "..."
	}
	return r
}
