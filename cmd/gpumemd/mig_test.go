package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// migRig is one node with a fake A100 at 7g.40gb, a desired layout of two 3g.20gb for
// it, and fake Slurm commands.
func migRig(t *testing.T) (dir, conf, nodeFile, desired string, slurm *slurmtest.Slurm) {
	dir = t.TempDir()
	conf = filepath.Join(dir, "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nSlurmConf = "+filepath.Join(dir, "no-slurm.conf")+"\n"), 0o644)
	nodeFile = filepath.Join(dir, "node.json")
	os.WriteFile(nodeFile, []byte(`{"gpus": [{"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}}]}`), 0o644)
	desired = filepath.Join(dir, "desired")
	os.Mkdir(desired, 0o755)
	os.WriteFile(filepath.Join(desired, "n1.json"), []byte(`{"version": 1, "node": "n1", "gpus": [{"index": 0, "model": "a100-40gb", "layout": "3g.20gb@0,3g.20gb@4"}]}`), 0o644)
	slurm = slurmtest.New(t, true)
	return dir, conf, nodeFile, desired, slurm
}

// TestMIGApplyFromDesired: gpumemd finds its node's desired layout differing, drains
// the node, repartitions the fake GPU, regenerates gres.conf through its one pipeline,
// resumes, and leaves no journal.
func TestMIGApplyFromDesired(t *testing.T) {
	dir, conf, nodeFile, desired, slurm := migRig(t)
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

	// The reload stands for the admin's: it puts the node's new Gres= where slurmctld
	// reports it (the fake scontrol's file), from what gpumemd hands it.
	reload := "printf %s \"$GPUMEM_NODE_GRES\" > " + filepath.Join(slurm.Dir, "node.gres") + " && test \"$GPUMEM_NODE\" = n1"
	start(t, append(args, "--mig-apply", "--mig-reload", reload)...)
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
	if g, _ := os.ReadFile(filepath.Join(slurm.Dir, "node.gres")); string(g) != "gpu:3g.20gb:2" {
		t.Errorf("the reload was handed Gres=%q, want gpu:3g.20gb:2", g)
	}
}

// TestMIGKeysFromConfigFlagsWin: the [mig] section sets what the --mig-* flags do, and a
// flag given wins over the file.
func TestMIGKeysFromConfigFlagsWin(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "gpumem.conf")
	os.WriteFile(conf, []byte("[mig]\nDesired = /etc/slurm/gpumem-mig.d\nApply = yes\nIdleTimeout = 30m\nReload = true\n"), 0o644)
	o, err := parseArgs([]string{"--config", conf}, io.Discard)
	if err != nil && err.Error() != "" {
		t.Fatal(err)
	}
	if o.MIG.Desired != "/etc/slurm/gpumem-mig.d" || !o.MIG.Apply || o.MIG.IdleTimeout != 30*time.Minute || o.MIG.Reload != "true" ||
		o.MIG.Journal != "/var/lib/gpumem/mig-journal.json" {
		t.Fatalf("[mig] not read: %+v", o.MIG)
	}
	o, _ = parseArgs([]string{"--config", conf, "--mig-apply=false", "--mig-idle-timeout", "1m", "--mig-desired", "/tmp/d"}, io.Discard)
	if o.MIG.Apply || o.MIG.IdleTimeout != time.Minute || o.MIG.Desired != "/tmp/d" {
		t.Fatalf("flags did not win over [mig]: %+v", o.MIG)
	}
	os.WriteFile(conf, []byte("[mig]\nApply = sure\n"), 0o644)
	if _, err := parseArgs([]string{"--config", conf}, io.Discard); err == nil || !strings.Contains(err.Error(), "want yes or no") {
		t.Fatalf("a bad [mig] key: %v", err)
	}
}

// TestMIGApplyWaitsForAnotherApply: while another process's apply holds the node's lock
// (an flock on the journal's .lock file), gpumemd changes neither the GPU nor the node;
// once the lock is let go it applies.
func TestMIGApplyWaitsForAnotherApply(t *testing.T) {
	dir, conf, nodeFile, desired, slurm := migRig(t)
	journal := filepath.Join(dir, "mig-journal.json")
	lock, err := os.OpenFile(journal+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	lock.WriteString(`{"id": "0123456789ab", "pid": 1, "cmd": "gpumemctl mig apply"}`)
	start(t, "--config", conf, "--nvml", "fake:"+nodeFile, "--node", "n1", "--listen", "127.0.0.1:0", "--health-state", "",
		"--poll-interval", "50ms", "--gres-interval", "100ms", "--scontrol", slurm.Scontrol,
		"--mig-desired", desired, "--mig-journal", journal, "--mig-apply")
	time.Sleep(time.Second) // ten looks at the desired layout
	if b, _ := os.ReadFile(nodeFile); strings.Contains(string(b), "3g.20gb") || strings.Contains(slurm.Calls(), "update") {
		t.Fatalf("gpumemd applied while another apply held the lock:\n%s\n%s", b, slurm.Calls())
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if !eventually(10*time.Second, func() bool {
		b, _ := os.ReadFile(nodeFile)
		return strings.Count(string(b), "3g.20gb") == 2 && strings.Contains(slurm.Calls(), "state=resume")
	}) {
		b, _ := os.ReadFile(nodeFile)
		t.Fatalf("the lock let go, gpumemd did not apply:\n%s\n%s", b, slurm.Calls())
	}
}
