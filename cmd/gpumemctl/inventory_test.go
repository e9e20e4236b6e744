package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The table names each GPU's fence as the inventory says it, and none for a file
// written before fences were known (format version 1).
func TestInventoryTableShowsFence(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"n1.json": `{"version": 2, "nodes": [{"name": "n1", "gpus": [
 {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559, "fence": "driver"},
 {"index": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559, "fence": "mps"}]}]}`,
		"n2.json": `{"nodes": [{"name": "n2", "gpus": [{"index": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034}]}]}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, "inventory", "--inventory", dir, "-o", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fence := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		fence[f[0]+"/"+f[1]] = f[6]
	}
	want := map[string]string{"n1/0": "driver", "n1/1": "mps", "n2/0": "none"}
	for k, v := range want {
		if fence[k] != v {
			t.Errorf("GPU %s: FENCE %q, want %q\n%s", k, fence[k], v, out)
		}
	}
}
