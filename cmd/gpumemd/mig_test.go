package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// TestMIGApplyFromDesired: gpumemd finds its node's desired layout differing, drains
// the node, repartitions the fake GPU, regenerates gres.conf through its one pipeline,
// resumes, and leaves no journal.
func TestMIGApplyFromDesired(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nSlurmConf = "+filepath.Join(dir, "no-slurm.conf")+"\n"), 0o644)
	nodeFile := filepath.Join(dir, "node.json")
	os.WriteFile(nodeFile, []byte(`{"gpus": [{"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}}]}`), 0o644)
	desired := filepath.Join(dir, "desired")
	os.Mkdir(desired, 0o755)
	os.WriteFile(filepath.Join(desired, "n1.json"), []byte(`{"version": 1, "node": "n1", "gpus": [{"index": 0, "model": "a100-40gb", "layout": "3g.20gb@0,3g.20gb@4"}]}`), 0o644)
	slurm := slurmtest.New(t, true)
	gres := filepath.Join(dir, "gres.conf")
	journal := filepath.Join(dir, "mig-journal.json")
	args := []string{"--config", conf, "--nvml", "fake:" + nodeFile, "--node", "n1", "--listen", "127.0.0.1:0",
		"--write-gres", "--gres-conf", gres, "--slurm-version", "22.05.8", "--dev-prefix", "/run/gpumem-lab/dev",
		"--poll-interval", "50ms", "--gres-interval", "100ms", "--scontrol", slurm.Scontrol, "--health-state", "",
		"--mig-desired", desired, "--mig-journal", journal, "--mig-idle-timeout", "5s"}

	// Without --mig-apply nothing changes.
	start(t, args...)
	time.Sleep(500 * time.Millisecond)
	if b, _ := os.ReadFile(gres); strings.Contains(string(b), "3g.20gb") || strings.Contains(slurm.Calls(), "update") {
		t.Fatalf("without --mig-apply the GPU or node changed:\n%s\n%s", b, slurm.Calls())
	}

	start(t, append(args, "--mig-apply")...)
	ok := eventually(10*time.Second, func() bool {
		b, _ := os.ReadFile(gres)
		_, err := os.Stat(journal)
		return strings.Count(string(b), "Type=3g.20gb") == 2 && os.IsNotExist(err) && strings.Contains(slurm.Calls(), "state=resume")
	})
	b, _ := os.ReadFile(gres)
	if !ok {
		t.Fatalf("the desired layout was not applied:\ngres.conf:\n%s\nslurm calls:\n%s", b, slurm.Calls())
	}
	if calls := slurm.Calls(); !strings.Contains(calls, "state=drain reason=gpumem: MIG layout change") {
		t.Errorf("the node was not drained first:\n%s", calls)
	}
}
