package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Hook timeouts. A hook is the admin's shell command, run after gpumem changed what
// Slurm reads (gres.conf, the node lines, a MIG layout), typically to have Slurm read it
// again: `scontrol reconfigure` or a slurmd restart, which takes seconds and seldom more
// than a minute. HookTimeout bounds those; a MIG reload also waits for slurmctld to take
// the node's new GRES count (a restart, or an edit of slurm.conf), so it gets longer.
const (
	HookTimeout       = 2 * time.Minute
	ReloadHookTimeout = 5 * time.Minute
	// hookWaitDelay is how long a hook that has exited (or been killed) may leave a child
	// holding its output (a daemon it started) before gpumem stops waiting for it.
	hookWaitDelay = 5 * time.Second
	// hookTailCap bounds the end of stderr kept for the error.
	hookTailCap = 2 << 10
)

// Hook is an admin's shell command, run as /bin/sh -c Command.
type Hook struct {
	Name    string        // what the error calls it, e.g. "gres hook" or "--hook"
	Command string        // the shell command
	Timeout time.Duration // the whole run; HookTimeout when zero
	Env     []string      // KEY=VALUE added to this process's environment
	Output  io.Writer     // gets stdout and stderr as the hook prints them; nil: dropped
}

// Run runs the hook and waits for it, at most Timeout. A hook that exited 0 succeeded,
// also when a child it started still holds its output. Any other end is an error that
// names the hook, how it ended (exit status, signal, timeout) and the end of its stderr.
func (h Hook) Run(ctx context.Context) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = HookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	cmd.WaitDelay = hookWaitDelay
	if len(h.Env) > 0 {
		cmd.Env = append(os.Environ(), h.Env...)
	}
	tail := &tailWriter{max: hookTailCap}
	var stdout io.Writer = io.Discard
	var stderr io.Writer = tail
	if h.Output != nil {
		w := &lockedWriter{w: h.Output} // one writer for two pipes
		stdout, stderr = w, io.MultiWriter(w, tail)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		return nil
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("no end within %s", timeout)
	}
	msg := fmt.Sprintf("%s %q: %v", h.Name, h.Command, err)
	if t := tail.String(); t != "" {
		msg += ": " + t
	}
	return errors.New(msg)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu   sync.Mutex
	b    []byte
	max  int
	lost bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b, t.lost = append(t.b[:0], t.b[over:]...), true
	}
	return len(p), nil
}

// String is the tail, trimmed; "..." in front says the start was dropped.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if t.lost && s != "" {
		s = "..." + s
	}
	return s
}

// lockedWriter lets stdout and stderr share one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
