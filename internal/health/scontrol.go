package health

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Scontrol drains and resumes nodes with Slurm's own command, so gpumemd needs no
// Slurm library and every change shows in slurmctld's log as an ordinary update.
type Scontrol struct {
	Path    string        // "scontrol" when empty
	Timeout time.Duration // per call; 10s when zero, so a hung slurmctld never stalls polling for long
}

// Drain sets the node to DRAIN with the reason.
func (s Scontrol) Drain(node, reason string) error {
	return s.run("update", "nodename="+node, "state=drain", "reason="+reason)
}

// Resume returns the node to service.
func (s Scontrol) Resume(node string) error {
	return s.run("update", "nodename="+node, "state=resume")
}

// Reason returns the node's drain reason ("" when it has none), from
// `scontrol show node NODE -o`, whose one line ends with Reason=... when there is one.
func (s Scontrol) Reason(node string) (string, error) {
	out, err := s.output("show", "node", node, "-o")
	if err != nil {
		return "", err
	}
	_, reason, ok := strings.Cut(strings.TrimSpace(out), " Reason=")
	if !ok {
		return "", nil
	}
	// Slurm appends " [user@time]" to the reason.
	if i := strings.LastIndex(reason, " ["); i >= 0 {
		reason = reason[:i]
	}
	return reason, nil
}

func (s Scontrol) run(args ...string) error {
	_, err := s.output(args...)
	return err
}

func (s Scontrol) output(args ...string) (string, error) {
	path, timeout := s.Path, s.Timeout
	if path == "" {
		path = "scontrol"
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
