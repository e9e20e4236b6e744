// Package health decides whether a node's GPUs can take jobs, and tells Slurm: NVML
// failing, a GPU lost since it was first seen, or a critical XID drains the node
// through scontrol; with resume on, the node comes back once every problem is gone. Application XIDs (a
// job's own fault: 13, 31, 43, 45, ...) never drain anything.
package health

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
	"github.com/gpumem/gpumem/internal/slurmcli"
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

// Drainer is how the monitor talks to Slurm; slurmcli.ScontrolNode in production.
type Drainer = slurmcli.NodeControl

// Monitor keeps the node's health from poll to poll. Slurm's view of the node wins
// over the monitor's: it drains only a node whose state allows it and that nobody else
// drained, never rewrites another drain's reason, resumes only while the drain is still
// its own, and takes an admin's resume of its drain as the admin's word that the
// problems it drained for are dealt with.
type Monitor struct {
	Node     string
	Drainer  Drainer
	Drain    bool         // drain the node on a problem
	Resume   bool         // resume it when every problem is gone (only if this monitor drained it)
	Critical map[int]bool // XIDs that drain; CriticalXIDs() by default
	// XIDHold is how long a critical XID counts as a problem; 0 keeps it until an admin
	// resumes the node, because most need a GPU reset that NVML cannot see happen.
	XIDHold time.Duration
	// DrainAfter and ResumeAfter are the consecutive bad (good) polls before a drain
	// (resume); 1 when zero. A problem that flickers never drains and resumes by turns.
	DrainAfter, ResumeAfter int
	// State is the file that keeps held XIDs, the GPUs seen and the monitor's own drain
	// across restarts; "" keeps nothing.
	State string
	Log   *slog.Logger // nil logs nothing

	st       persisted
	loaded   bool
	problems []string
	bad      int // consecutive polls with a problem
	good     int // consecutive polls without
	held     string
	// XIDCounts counts every XID seen, critical or not, per GPU and XID.
	XIDCounts map[[2]int]uint64
}

// Status is the monitor's view after a poll.
type Status struct {
	Healthy  bool
	Problems []string
	Drained  bool // drained by this monitor and not yet resumed
	// Held is set when the node is unhealthy but Slurm's state of it is not the
	// monitor's to change (an admin's drain, a down or rebooting node): why.
	Held string
}

// XID records an XID event on a GPU.
func (m *Monitor) XID(gpu, xid int, at time.Time) {
	m.load()
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
	m.st.XIDs[strconv.Itoa(gpu)] = xidMark{XID: xid, At: at}
	m.save()
}

// Observe judges one poll (sampleErr is the poll's own failure) and drains or resumes
// the node. It returns the status and the error of a failed scontrol call, which is
// retried on the next poll.
func (m *Monitor) Observe(s usage.Snapshot, sampleErr error, now time.Time) (Status, error) {
	m.load()
	m.problems = m.problems[:0]
	if sampleErr != nil {
		m.problems = append(m.problems, "NVML failed: "+sampleErr.Error())
	} else {
		m.checkGPUs(s)
	}
	for gpu, x := range m.st.XIDs {
		if m.XIDHold > 0 && now.Sub(x.At) > m.XIDHold {
			delete(m.st.XIDs, gpu)
			m.save()
			continue
		}
		m.problems = append(m.problems, fmt.Sprintf("GPU %s XID %d", gpu, x.XID))
	}
	sort.Strings(m.problems)
	st := Status{Healthy: len(m.problems) == 0, Problems: append([]string(nil), m.problems...)}
	if st.Healthy {
		m.good, m.bad = m.good+1, 0
	} else {
		m.bad, m.good = m.bad+1, 0
	}
	var err error
	switch {
	case !st.Healthy && m.Drain && m.st.Drained == "" && m.bad >= max(m.DrainAfter, 1):
		err = m.drain(Reason(m.problems))
	case m.st.Drained != "" && (!st.Healthy || m.Resume && m.good >= max(m.ResumeAfter, 1)):
		err = m.followUp(st.Healthy, now)
	}
	st.Drained = m.st.Drained != ""
	if !st.Healthy && !st.Drained {
		st.Held = m.held
	}
	return st, err
}

// drain drains the node unless Slurm's state of it is not the monitor's to change.
func (m *Monitor) drain(reason string) error {
	n, err := m.Drainer.Node(m.Node)
	if err != nil {
		return err
	}
	if n.Flag("DRAIN") && ownReason(n.Reason) {
		// Its own drain from before a restart that lost the state file: it stays.
		m.st.Drained = n.Reason
		m.save()
		return nil
	}
	if why := notOurs(n); why != "" {
		if why != m.held {
			m.held = why
			m.log(slog.LevelWarn, "node unhealthy but not drained by gpumemd: "+why, "node", m.Node, "problems", reason)
		}
		return nil
	}
	m.held = ""
	if err := m.Drainer.Drain(m.Node, reason); err != nil {
		return err
	}
	m.st.Drained = reason
	m.save()
	return nil
}

// followUp looks at the monitor's drain while it lasts: an admin who resumed it, or
// drained the node again with a reason of their own, has taken the node over; once the
// problems are gone (ResumeAfter polls), the drain is lifted only if it is still the
// monitor's.
func (m *Monitor) followUp(healthy bool, now time.Time) error {
	n, err := m.Drainer.Node(m.Node)
	if err != nil {
		return err
	}
	switch {
	case !n.Flag("DRAIN"):
		// Resumed by an admin: the problems it drained for are theirs now. Held XIDs
		// are cleared and the GPUs as they are become the baseline, or the same
		// problem would drain the node again at once.
		m.log(slog.LevelInfo, "an admin resumed the node gpumemd drained; its held problems are cleared", "node", m.Node, "reason", m.st.Drained)
		m.st = persisted{Version: stateVersion, XIDs: map[string]xidMark{}}
		m.save()
		return nil
	case !ownReason(n.Reason):
		m.log(slog.LevelInfo, "the node was drained again with a reason not the health monitor's (an admin's, or a failed fence's); gpumemd will not resume it", "node", m.Node, "reason", n.Reason)
		m.st.Drained = ""
		m.save()
		return nil
	case !healthy:
		return nil
	}
	if err := m.Drainer.Resume(m.Node); err != nil {
		return err
	}
	m.st.Drained = ""
	m.save()
	return nil
}

// notOurs says why the monitor must leave the node's state alone ("" when it may
// drain): someone else's drain, a down, rebooting, powered-down, future or maintenance
// node. Draining those would overwrite their reason or fight the admin's plan.
func notOurs(n slurmcli.Node) string {
	for _, f := range []string{"DRAIN", "DOWN", "FUTURE", "REBOOT_REQUESTED", "REBOOT_ISSUED", "MAINT", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP"} {
		if n.Flag(f) {
			if n.Reason != "" {
				return fmt.Sprintf("state %s, reason %q", n.State, n.Reason)
			}
			return "state " + n.State
		}
	}
	return ""
}

func (m *Monitor) log(level slog.Level, msg string, args ...any) {
	if m.Log != nil {
		m.Log.Log(context.Background(), level, msg, args...)
	}
}

// checkGPUs compares the poll with the GPUs of the first good poll: a GPU that left, or
// that answers its handle but not its memory, is lost.
func (m *Monitor) checkGPUs(s usage.Snapshot) {
	if m.st.GPUs == nil && allAnswer(s) {
		m.st.GPUs = map[string]int{}
		for _, g := range s.GPUs {
			m.st.GPUs[g.UUID] = g.Index
		}
		m.save()
	}
	present := map[string]bool{}
	for _, g := range s.GPUs {
		if g.Err != nil {
			m.problems = append(m.problems, fmt.Sprintf("GPU %d lost: %v", g.Index, g.Err))
			continue
		}
		present[g.UUID] = true
	}
	for uuid, idx := range m.st.GPUs {
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

// ownReason says whether a drain reason is one the monitor writes (drainreason.IsHealth,
// which also knows the previous release's). Every other drain of gpumem's is some other
// writer's: a failed driver fence is lifted only by an admin or by the fence itself, and
// a MIG layout change by its apply (were the monitor to adopt that one, as NVML may well
// report errors while instances are rebuilt, it would resume the node in the middle of
// the change).
func ownReason(reason string) bool {
	return drainreason.IsHealth(reason)
}

// Reason is the drain reason Slurm shows, short enough for sinfo -R.
func Reason(problems []string) string {
	return drainreason.ForHealth(problems)
}
