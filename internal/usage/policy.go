package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Policies for a job that holds more GPU memory than its slice.
const (
	PolicyRecord = "record" // only measure: metrics and history
	PolicyWarn   = "warn"   // log, count, and optionally tell the job on its stderr
	PolicyKill   = "kill"   // warn, then kill its GPU processes once the grace is over
)

// ParsePolicy checks a policy name from the command line or gpumem.conf.
func ParsePolicy(s string) (string, error) {
	switch s {
	case PolicyRecord, PolicyWarn, PolicyKill:
		return s, nil
	}
	return "", fmt.Errorf("usage policy %q: want %s, %s or %s", s, PolicyRecord, PolicyWarn, PolicyKill)
}

// Action is one thing the enforcer did, for logs and metrics.
type Action struct {
	Job    string
	Kind   string // "warn" or "kill"
	PIDs   []int  // killed processes
	Detail string
}

// Enforcer applies a policy poll after poll. It remembers since when each job has been
// over its slice, so a short spike (an allocator's peak while it frees) is forgiven
// when it is gone before the grace period ends.
type Enforcer struct {
	Policy string
	Grace  time.Duration
	// Notify writes the warning to the stderr of the job's GPU processes.
	Notify bool
	// Owner re-checks a process's job just before it is signalled, so a PID that was
	// reused since the poll is never killed.
	Owner OwnerFunc
	// Proc is the proc filesystem root used to reach a process's stderr.
	Proc string
	// Signal sends sig to pid; syscall.Kill when nil.
	Signal func(pid int, sig syscall.Signal) error

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
		if !j.Over() || e.Policy == PolicyRecord {
			continue
		}
		seen[j.ID] = true
		since, ok := e.overSince[j.ID]
		if !ok {
			since, e.overSince[j.ID] = now, now
		}
		if !e.warned[j.ID] {
			e.warned[j.ID] = true
			acts = append(acts, e.warn(j))
		}
		if e.Policy == PolicyKill && now.Sub(since) >= e.Grace {
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

func (e *Enforcer) warn(j *Job) Action {
	msg := fmt.Sprintf("gpumem: job %s uses %s of GPU memory but was allocated %s", j.ID, GiB(j.Used), GiB(j.Alloc))
	if e.Policy == PolicyKill {
		msg += fmt.Sprintf("; its GPU processes will be killed in %s unless it frees memory", e.Grace)
	}
	if e.Notify {
		for _, g := range j.GPUs {
			for _, pid := range g.PIDs {
				e.tell(pid, j.ID, msg)
			}
		}
	}
	return Action{Job: j.ID, Kind: "warn", Detail: msg}
}

// tell writes to a process's stderr through /proc/PID/fd/2, which reaches the job's
// output file or terminal; a socket or a closed stderr just gets nothing.
func (e *Enforcer) tell(pid int, job, msg string) {
	if !e.owns(pid, job) {
		return
	}
	f, err := os.OpenFile(filepath.Join(e.Proc, strconv.Itoa(pid), "fd", "2"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, msg)
}

// kill signals the job's GPU processes; did is false when none was still the job's.
func (e *Enforcer) kill(j *Job) (a Action, did bool) {
	a = Action{Job: j.ID, Kind: "kill"}
	signal := e.Signal
	if signal == nil {
		signal = syscall.Kill
	}
	var failed []string
	for _, g := range j.GPUs {
		for _, pid := range g.PIDs {
			if !e.owns(pid, j.ID) {
				continue
			}
			if err := signal(pid, syscall.SIGKILL); err != nil {
				failed = append(failed, fmt.Sprintf("%d: %v", pid, err))
				continue
			}
			a.PIDs = append(a.PIDs, pid)
		}
	}
	a.Detail = fmt.Sprintf("gpumem: killed job %s's GPU processes %v: %s used, %s allocated, over for more than %s", j.ID, a.PIDs, GiB(j.Used), GiB(j.Alloc), e.Grace)
	if len(failed) > 0 {
		a.Detail += fmt.Sprintf("; could not kill %v", failed)
	}
	return a, len(a.PIDs)+len(failed) > 0
}

func (e *Enforcer) owns(pid int, job string) bool {
	if e.Owner == nil {
		return false
	}
	o, err := e.Owner(pid)
	return err == nil && o.JobID == job
}

// GiB formats bytes for people.
func GiB(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
