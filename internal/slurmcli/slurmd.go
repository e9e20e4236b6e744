package slurmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrNoSlurmd means slurmd is not installed, so nothing could be asked of it.
var ErrNoSlurmd = errors.New("slurmd not installed")

// ErrNoAnswer is returned (wrapped) when slurmd -G does not end within its timeout.
var ErrNoAnswer = errors.New("no answer")

// Timeouts of slurmd's two modes that start no daemon.
const (
	VersionTimeout = 10 * time.Second
	// GresTimeout leaves slurmd -G time to read slurm.conf and look at every device file.
	GresTimeout = 30 * time.Second
)

// Slurmd runs slurmd's two modes that start no daemon: -V (its release) and -G (the
// GRES a node would register, from a slurm.conf and the gres.conf beside it).
type Slurmd struct {
	Path    string        // the binary; "" looks slurmd up in PATH
	Timeout time.Duration // of -G; GresTimeout when zero
}

// Bin is the slurmd to run: Path, or slurmd from PATH; ErrNoSlurmd when Path is empty
// and PATH has none.
func (s Slurmd) Bin() (string, error) {
	if s.Path != "" {
		return s.Path, nil
	}
	bin, err := exec.LookPath("slurmd")
	if err != nil {
		return "", ErrNoSlurmd
	}
	return bin, nil
}

// Version returns what `slurmd -V` printed, trimmed.
func (s Slurmd) Version(ctx context.Context) (string, error) {
	bin, err := s.Bin()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-V")
	cmd.WaitDelay = waitDelay // a child left on the pipe cannot hold the call
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s -V: %w", bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Gres runs `slurmd -D -G -N node -f conf` and returns all it printed, stdout and
// stderr as they came. err is how slurmd ended (an *exec.ExitError when it refused),
// or ErrNoAnswer (wrapped, naming the node and the timeout) when it did not end in
// time; the output is returned either way, for the lines that say why.
func (s Slurmd) Gres(ctx context.Context, node, conf string) (string, error) {
	bin, err := s.Bin()
	if err != nil {
		return "", err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = GresTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	// -D keeps slurmd in the foreground, where it logs to stderr: without it, a slurmd
	// that stops before reading gres.conf (a cgroup plugin it cannot load, say) says why
	// only to syslog, and the check could show no reason at all.
	cmd := exec.CommandContext(ctx, bin, "-D", "-G", "-N", node, "-f", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = waitDelay // a child left on the pipe cannot hold the check
	err = cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("slurmd -G -N %s: %w in %s", node, ErrNoAnswer, timeout)
	}
	return out.String(), err
}
