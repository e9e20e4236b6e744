package fencehook

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/drainreason"
)

// Reasons is what the drain decisions need of Slurm: a node's drain reason ("" for
// none), and the drain and resume themselves (slurmcli.ScontrolNode).
type Reasons interface {
	Reason(node string) (string, error)
	Drain(node, reason string) error
	Resume(node string) error
}

// DrainUnlessReason drains node with reason unless it already has one: an admin's
// reason (or an earlier one of gpumemd's) is never overwritten.
func DrainUnlessReason(s Reasons, node, reason string) error {
	have, err := s.Reason(node)
	if err != nil {
		return err
	}
	if have != "" {
		return fmt.Errorf("node %s already has the reason %q; not drained over it", node, have)
	}
	return s.Drain(node, reason)
}

// ResumeOwnDrain resumes node when what drains it is the failed fence of job: that
// job's next fence on this node succeeded. Any other reason (an admin's, the health
// monitor's, another job's fence) stays; false then.
func ResumeOwnDrain(s Reasons, node, job string) (bool, error) {
	have, err := s.Reason(node)
	if err != nil || drainreason.FenceJob(have) != job {
		return false, err
	}
	return true, s.Resume(node)
}

// DrainReason is the drain reason of job's fence that failed with err: the first line
// of err, in drainreason's fence form (which ResumeOwnDrain recognises).
func DrainReason(job string, err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return drainreason.ForFence(job, "GPU memory fence not set: "+line)
}

// FailureLine is the line FenceFailures counts a failed fence with: its time, then msg
// on one line.
func FailureLine(now time.Time, msg string) string {
	return now.UTC().Format(time.RFC3339) + " " + strings.ReplaceAll(msg, "\n", " ") + "\n"
}
