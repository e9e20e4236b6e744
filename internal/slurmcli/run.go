// Package slurmcli is gpumem's one way to Slurm's command line: a runner that bounds
// every call (deadline, a child that keeps its pipes open, output size), readers of
// what scontrol and squeue print that text a user chose (a job name, a comment, a
// working directory) cannot steer, the one query of the pending jobs (ReadPending),
// slurmd's -V and -G (Slurmd), and the admin's shell hooks run after gpumem changed
// what Slurm reads (Hook).
package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Defaults of a Runner's zero fields.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxOutput = 64 << 20
	// waitDelay is how long a child that has been killed, or has exited, may keep its
	// output pipes open (a grandchild holding them) before they are closed on it.
	waitDelay = time.Second
	// stderrCap bounds the part of stderr kept for an error message.
	stderrCap = 4 << 10
)

// Runner runs one Slurm client command (scontrol, squeue, ...).
type Runner struct {
	Path      string        // the binary, by path or name
	Timeout   time.Duration // per call; DefaultTimeout when zero
	MaxOutput int           // bytes of stdout; DefaultMaxOutput when zero
	Env       []string      // KEY=VALUE added to this process's environment, e.g. SLURM_TIME_FORMAT
}

// Scontrol is a Runner for path, "scontrol" when empty.
func Scontrol(path string) Runner { return named(path, "scontrol") }

// Squeue is a Runner for path, "squeue" when empty.
func Squeue(path string) Runner { return named(path, "squeue") }

// SqueueBeside is a Runner for the squeue beside scontrol, when scontrol is named by a
// path (a site's own Slurm prefix) and that squeue exists; else squeue from PATH.
func SqueueBeside(scontrol string) Runner { return Runner{Path: beside(scontrol, "squeue")} }

// ScancelBeside is a Runner for the scancel beside scontrol, as SqueueBeside.
func ScancelBeside(scontrol string) Runner { return Runner{Path: beside(scontrol, "scancel")} }

// beside is the Slurm command name in scontrol's folder, or name from PATH.
func beside(scontrol, name string) string {
	if i := strings.LastIndex(scontrol, "/"); i >= 0 {
		dir := scontrol[:i]
		if i == 0 {
			dir = "."
		}
		p := dir + "/" + name
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return name
}

func named(path, def string) Runner {
	if path == "" {
		path = def
	}
	return Runner{Path: path}
}

// ErrTooLarge is returned (wrapped) when a command prints more than MaxOutput bytes.
var ErrTooLarge = errors.New("output too large")

// ErrUnreachable is returned (wrapped) when the command could not reach slurmctld, or
// did not answer in time: what a controller restart or failover looks like from a
// client for some seconds, and worth asking again, where a refusal is not.
var ErrUnreachable = errors.New("slurmctld unreachable")

// unreachable are the texts of Slurm's errors for a controller it cannot reach or that
// does not serve yet (slurm_errno.c), as its clients print them on stderr.
var unreachable = []string{
	"Unable to contact slurm controller",
	"Socket timed out on send/recv operation",
	"Zero Bytes were transmitted or received",
	"Communication connection failure",
	"in standby mode",
}

func unreachableText(stderr string) bool {
	for _, u := range unreachable {
		if strings.Contains(stderr, u) {
			return true
		}
	}
	return false
}

// Run runs the command with args and returns its stdout. The call ends by ctx, by
// Timeout, or as soon as stdout passes MaxOutput, whichever comes first; the error
// names the command and carries the start of its stderr.
func (r Runner) Run(ctx context.Context, args ...string) (string, error) {
	timeout, max := r.Timeout, r.MaxOutput
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if max <= 0 {
		max = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Path, args...)
	cmd.WaitDelay = waitDelay
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
	out := &capped{max: max, over: cancel}
	errOut := &capped{max: stderrCap}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	name := r.Path + " " + strings.Join(args, " ")
	switch {
	case out.exceeded():
		return "", fmt.Errorf("%s: %w: more than %d bytes", name, ErrTooLarge, max)
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("%s: no answer within %s (%w)", name, timeout, ErrUnreachable)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		// The command itself is missing: say so, not the exec package's words alone.
		return "", fmt.Errorf("%s: %w: Slurm's client commands are not installed on this host, or not at this path (the command's flags can name them)", r.Path, err)
	case err != nil && unreachableText(errOut.String()):
		return "", fmt.Errorf("%s: %v: %s (%w)", name, err, strings.TrimSpace(errOut.String()), ErrUnreachable)
	case err != nil:
		return "", fmt.Errorf("%s: %v: %s", name, err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// capped keeps up to max bytes; past that it keeps nothing more, calls over once (to
// stop the command) and reports the overflow.
type capped struct {
	mu   sync.Mutex
	b    strings.Builder
	max  int
	full bool
	over func()
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); len(p) > room {
		if room > 0 {
			c.b.Write(p[:room])
		}
		if !c.full && c.over != nil {
			c.over()
		}
		c.full = true
		return len(p), nil // swallowed: the command is being stopped
	}
	c.b.Write(p)
	return len(p), nil
}

func (c *capped) exceeded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
