package slurmcli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// A failed hook's error names it, says how it ended and ends with the last of its
// stderr; what it printed also reaches Output, stdout and stderr alike.
func TestHookErrorNamesHookExitAndStderr(t *testing.T) {
	var out strings.Builder
	h := slurmcli.Hook{Name: "--hook", Command: "echo reconfiguring; echo 'scontrol: error: Unable to contact slurm controller' >&2; exit 3", Output: &out}
	err := h.Run(context.Background())
	want := `--hook "echo reconfiguring; echo 'scontrol: error: Unable to contact slurm controller' >&2; exit 3": exit status 3: scontrol: error: Unable to contact slurm controller`
	if err == nil || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
	if got := out.String(); !strings.Contains(got, "reconfiguring\n") || !strings.Contains(got, "Unable to contact") {
		t.Errorf("Output got %q; want both streams", got)
	}
	// Only stdout: the error has no tail; a long stderr keeps its end.
	if err := (slurmcli.Hook{Name: "gres hook", Command: "echo fine; exit 1"}).Run(context.Background()); err == nil || err.Error() != `gres hook "echo fine; exit 1": exit status 1` {
		t.Errorf("stdout only: %v", err)
	}
	err = slurmcli.Hook{Name: "h", Command: `i=0; while [ $i -lt 500 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 1`}.Run(context.Background())
	if err == nil || !strings.HasSuffix(err.Error(), "line 499") || !strings.Contains(err.Error(), "exit status 1: ...") || strings.Contains(err.Error(), "line 0\n") || len(err.Error()) > 3<<10 {
		t.Errorf("long stderr: %d bytes, %.200q...", len(err.Error()), err)
	}
}

func TestHookEnvAndSuccess(t *testing.T) {
	h := slurmcli.Hook{Name: "MIG reload", Command: `test "$GPUMEM_NODE" = n1 && test "$GPUMEM_NODE_GRES" = gpu:2`, Env: []string{"GPUMEM_NODE=n1", "GPUMEM_NODE_GRES=gpu:2"}}
	if err := h.Run(context.Background()); err != nil {
		t.Errorf("env hook: %v", err)
	}
}

// A hook that runs past its timeout is stopped, and the error says so.
func TestHookTimeout(t *testing.T) {
	start := time.Now()
	err := slurmcli.Hook{Name: "gres hook", Command: "echo starting >&2; exec sleep 30", Timeout: 200 * time.Millisecond}.Run(context.Background())
	if took := time.Since(start); err == nil || took > 8*time.Second || !strings.Contains(err.Error(), `gres hook "echo starting >&2; exec sleep 30": no end within 200ms: starting`) {
		t.Errorf("after %s: %v; want the timeout named, with stderr", took, err)
	}
}

// A hook that exits 0 but leaves a child holding its output (a daemon it started)
// has succeeded; the wait for that child is bounded.
func TestHookLeavingDaemonSucceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the hook's 5s output delay")
	}
	start := time.Now()
	err := slurmcli.Hook{Name: "h", Command: "sleep 30 & exit 0"}.Run(context.Background())
	if took := time.Since(start); err != nil || took > 15*time.Second {
		t.Errorf("after %s: %v; want success within the wait delay", took, err)
	}
}
