package slurmcli_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

func TestSlurmdGres(t *testing.T) {
	s := slurmcli.Slurmd{Path: script(t, `echo "$@"; echo 'slurmd: Gres Name=gpu Type=h100' >&2; exit 1`)}
	out, err := s.Gres(context.Background(), "n1", "/tmp/x/slurm.conf")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "-D -G -N n1 -f /tmp/x/slurm.conf\n") || !strings.Contains(out, "Gres Name=gpu Type=h100") {
		t.Errorf("Gres = %q, %v; want the arguments, both streams and the exit", out, err)
	}
	s = slurmcli.Slurmd{Path: script(t, `echo 'slurmd: waiting for /dev/nvidia9'; exec sleep 30`), Timeout: 200 * time.Millisecond}
	out, err = s.Gres(context.Background(), "n1", "c")
	if !errors.Is(err, slurmcli.ErrNoAnswer) || err.Error() != "slurmd -G -N n1: no answer in 200ms" || !strings.Contains(out, "waiting for") {
		t.Errorf("a slurmd that hangs: %q, %v", out, err)
	}
	if v, err := (slurmcli.Slurmd{Path: script(t, `echo "slurm 24.11.5"`)}).Version(context.Background()); err != nil || v != "slurm 24.11.5" {
		t.Errorf("Version = %q, %v", v, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := (slurmcli.Slurmd{}).Version(context.Background()); !errors.Is(err, slurmcli.ErrNoSlurmd) {
		t.Errorf("no slurmd in PATH: %v", err)
	}
}
