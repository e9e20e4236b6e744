package usage

import (
	"fmt"
	"github.com/gpumem/gpumem/internal/units"
	"syscall"
	"time"
)

// Policies for a job that holds more GPU memory than its slice. gpumem.conf and
// gpumemd's flags read them with config.ParseUsagePolicy, case-insensitively.
const (
	PolicyRecord = "record" // only measure: metrics, history and one log line per episode
	PolicyWarn   = "warn"   // log, count, and optionally tell the job on its stderr
	PolicyKill   = "kill"   // warn, then kill its GPU processes once the grace is over
)

// Action is one thing the enforcer did, for logs and metrics.
type Action struct {
	Job    string
	Kind   string // "record" (logged only), "warn" or "kill"
	PIDs   []int  // killed processes
	Detail string
}

// Enforcer applies a policy poll after poll. It remembers since when each job has been
// over its slice, so a short spike (an allocator's peak while it frees) is forgiven
// when it is gone before the grace period ends.
type Enforcer struct {
	UsagePolicy string // PolicyRecord, PolicyWarn or PolicyKill (gpumem.conf UsagePolicy)
	Grace       time.Duration
	// Tell hands a warning to the job through Slurm (Notifier.Tell: scontrol notify)
	// and returns at once; nil tells the job nothing. The enforcer never opens anything
	// of a job's processes itself.
	Tell func(job, msg string)
	// Confirm asks Slurm, at the moment of acting, which of pids still run in job (as
	// its user); only those are signalled. Nil confirms none, so nothing is killed.
	Confirm func(job string, pids []int) (map[int]bool, error)

	overSince map[string]time.Time
	warned    map[string]bool
}

// Step looks at one poll's jobs and acts on those over their slice.
func (e *Enforcer) Step(jobs []Job, now time.Time) []Action {
	if e.overSince == nil {
		e.overSince, e.warned = map[string]time.Time{}, map[string]bool{}
	}
	seen := map[string]bool{}
	var acts []Action
	for i := range jobs {
		j := &jobs[i]
		if !j.Over() {
			continue
		}
		seen[j.ID] = true
		since, ok := e.overSince[j.ID]
		if !ok {
			since, e.overSince[j.ID] = now, now
		}
		if !e.warned[j.ID] {
			e.warned[j.ID] = true
			if e.UsagePolicy == PolicyRecord {
				// Measured only, but an admin reading the log sees the job once per
				// episode, not only a metric.
				acts = append(acts, Action{Job: j.ID, Kind: "record", Detail: e.message(j) + " (UsagePolicy = record: nothing done)"})
				continue
			}
			acts = append(acts, e.warn(j))
		}
		if e.UsagePolicy == PolicyRecord {
			continue
		}
		if e.UsagePolicy == PolicyKill && now.Sub(since) >= e.Grace {
			if a, did := e.kill(j); did {
				acts = append(acts, a)
			}
			e.overSince[j.ID] = now // a survivor gets a fresh grace, not a kill per poll
		}
	}
	for id := range e.overSince {
		if !seen[id] {
			delete(e.overSince, id)
			delete(e.warned, id)
		}
	}
	return acts
}

// message says how job j is over its allocation.
func (e *Enforcer) message(j *Job) string {
	if j.Stray > 0 {
		return fmt.Sprintf("gpumem: job %s holds %s of GPU memory on GPUs it was not given %v (allocated %s, using %s there)", j.ID, gibOf(j.Stray), strayGPUs(j), gibOf(j.Alloc), gibOf(j.Used))
	}
	return fmt.Sprintf("gpumem: job %s uses %s of GPU memory but was allocated %s", j.ID, gibOf(j.Used), gibOf(j.Alloc))
}

func (e *Enforcer) warn(j *Job) Action {
	msg := e.message(j)
	if e.UsagePolicy == PolicyKill {
		msg += fmt.Sprintf("; its GPU processes will be killed in %s unless it frees memory", e.Grace)
	}
	if e.Tell != nil {
		e.Tell(j.ID, msg)
	}
	return Action{Job: j.ID, Kind: "warn", Detail: msg}
}

// kill signals the job's GPU processes; did is false when none was still the job's.
func (e *Enforcer) kill(j *Job) (a Action, did bool) {
	a = Action{Job: j.ID, Kind: "kill"}
	var pids []int
	for _, g := range j.GPUs {
		pids = append(pids, g.PIDs...)
	}
	confirm := e.Confirm
	if confirm == nil {
		confirm = func(string, []int) (map[int]bool, error) { return nil, nil }
	}
	killed, failed := signalConfirmed(j.ID, pids, confirm, syscall.SIGKILL)
	a.PIDs = killed
	a.Detail = fmt.Sprintf("gpumem: killed job %s's GPU processes %v: %s used, %s allocated, %s on GPUs not given, over for more than %s", j.ID, a.PIDs, gibOf(j.Used), gibOf(j.Alloc), gibOf(j.Stray), e.Grace)
	if len(failed) > 0 {
		a.Detail += fmt.Sprintf("; could not kill %v", failed)
	}
	return a, len(a.PIDs)+len(failed) > 0
}

// strayGPUs are the GPUs where the job holds memory it was not given.
func strayGPUs(j *Job) []int {
	var out []int
	for _, g := range j.GPUs {
		if g.Stray > 0 {
			out = append(out, g.GPU)
		}
	}
	return out
}

// gibOf writes bytes for people, as every gpumem message does.
func gibOf(b uint64) string { return units.BytesGiB(float64(b)) }
