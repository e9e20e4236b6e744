package gresconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRefusesWhatSlurmdRejects: a gres.conf slurmd rejects is refused, and is
// not taken for "slurmd missing" (which lets the file through with a warning). The
// real slurmd's verdicts are TestSlurmdAcceptsWhatWeRender's, where slurmd is installed;
// here a stand-in on PATH answers as slurmd does for a broken file (a fatal line, exit 1),
// so the decision is checked on every machine, slurmd or not.
func TestCheckRefusesWhatSlurmdRejects(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	slurmd := "#!/bin/sh\necho 'slurmd: fatal: Invalid GRES data for gpu, Typo=h100' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "slurmd"), []byte(slurmd), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=c\nNodeName=n1 Gres=gpu:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	warned, err := Check{SlurmConf: conf, Nodes: []string{"n1"}}.Validate(lab(), []byte("NodeName=n1 Name=gpu Typo=h100\n"))
	if err == nil || !strings.Contains(err.Error(), "slurmd rejects the gres.conf for node n1") || !strings.Contains(err.Error(), "Invalid GRES") {
		t.Fatalf("a gres.conf slurmd rejects: err %v; want the rejection with slurmd's reason", err)
	}
	if warned {
		t.Error("a rejection was reported as slurmd missing")
	}
}
