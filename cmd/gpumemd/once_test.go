package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnceWritesGresAndInventory: one node after another into a shared directory, as
// a lab or a provisioning script runs it; the last gres.conf covers every node, and a
// second run over an unchanged node rewrites nothing.
func TestOnceWritesGresAndInventory(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nSlurmConf = "+filepath.Join(dir, "no-slurm.conf")+"\n"), 0o644)
	gres := filepath.Join(dir, "gres.conf")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	once := func(node string) {
		t.Helper()
		err := run(context.Background(), []string{"--config", conf, "--once",
			"--nvml", "fake:../../test/lab/nodes/" + node + ".json", "--node", node,
			"--write-gres", "--gres-conf", gres, "--slurm-version", "22.05.8",
			"--write-inventory", "--inventory-dir", filepath.Join(dir, "inv"),
			"--dev-prefix", "/run/gpumem-lab/dev", "--listen", "127.0.0.1:1"}, log, nil)
		if err != nil {
			t.Fatalf("gpumemd --once for %s: %v", node, err)
		}
	}
	once("n1")
	once("n2")
	b, err := os.ReadFile(gres)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NodeName=n1 Name=shard Count=",
		// 22.05 splits MultipleFiles records, so a MIG instance is its caps file alone.
		"NodeName=n2 Name=gpu Type=3g.20gb File=/run/gpumem-lab/dev/nvidia-caps/nvidia-cap30\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("gres.conf lacks %q:\n%s", want, b)
		}
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := os.Stat(filepath.Join(dir, "inv", n+".json")); err != nil {
			t.Errorf("inventory of %s: %v", n, err)
		}
	}
	prev, _ := os.ReadFile(gres + ".prev")
	once("n2")
	again, _ := os.ReadFile(gres + ".prev")
	if string(prev) != string(again) {
		t.Errorf("an unchanged node rewrote gres.conf (its .prev changed)")
	}
}
