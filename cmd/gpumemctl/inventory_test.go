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
		fence[f[0]+"/"+f[1]] = f[7]
	}
	want := map[string]string{"n1/0": "driver", "n1/1": "mps", "n2/0": "none"}
	for k, v := range want {
		if fence[k] != v {
			t.Errorf("GPU %s: FENCE %q, want %q\n%s", k, fence[k], v, out)
		}
	}
}

// The table draws each GPU's memory as a bar as long as the GPU is against the largest
// listed, '#' the part its MIG instances hold; the bar holds no blank, so the columns
// still split at spaces.
func TestInventoryTableDrawsMemoryBars(t *testing.T) {
	inv := filepath.Join(t.TempDir(), "inv.json")
	body := `{"version": 2, "nodes": [{"name": "n1", "gpus": [
 {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 80000},
 {"index": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 80000, "mig": true, "mig_instances": [
  {"profile": "3g.40gb", "memory_mib": 40000, "gi": 1, "ci": 0, "start": 0, "slices": 3}]},
 {"index": 2, "name": "NVIDIA L4", "type": "l4", "memory_mib": 20000}]}]}`
	if err := os.WriteFile(inv, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "inventory", "--inventory", inv, "-o", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "MEMORY (# in MIG instances)") {
		t.Errorf("header %q names no memory bar", lines[0])
	}
	got := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if f[0] == "n1" {
			got[f[1]] = f[5]
		}
	}
	want := map[string]string{
		"0": "[....................]", // the largest, nothing in instances
		"1": "[##########..........]", // half in its one instance
		"2": "[.....]",                // a quarter of the largest
	}
	for gpu, w := range want {
		if got[gpu] != w {
			t.Errorf("GPU %s: bar %q, want %q\n%s", gpu, got[gpu], w, out)
		}
	}
}
