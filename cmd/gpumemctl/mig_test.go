package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/history"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/usage"
)

func TestMigPlan(t *testing.T) {
	out, err := run(t, "mig", "plan", "--model", "h100-80gb", "20G", "20G", "10G")
	if err != nil {
		t.Fatal(err)
	}
	// Real MiB decide: 20 GiB needs 3g.40gb (2g.20gb holds 20096 MiB), 10 GiB needs 1g.20gb.
	if !strings.Contains(out, "--layout 0=3g.40gb@0,3g.40gb@4") || !strings.Contains(out, "--layout 1=1g.20gb@0") {
		t.Fatalf("plan:\n%s", out)
	}
	if _, err := run(t, "mig", "plan", "--model", "h100-80gb", "--gpus", "1", "40G", "40G", "40G"); err == nil || !strings.Contains(err.Error(), "need 3") {
		t.Fatalf("a plan over --gpus: %v", err)
	}
	if _, err := run(t, "mig", "plan", "--model", "v100", "1G"); err == nil {
		t.Fatal("an unknown model was planned")
	}
	if _, err := run(t, "mig", "plan", "20 apples"); err == nil {
		t.Fatal("a bad size was planned")
	}
}

// fakeNode writes a fake node and returns the flags naming it and a private journal.
func fakeNode(t *testing.T, body string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return "--nvml=fake:" + p, "--journal=" + filepath.Join(dir, "journal.json")
}

const twoMIG = `{"gpus": [
  {"model": "h100-80gb", "mig": {"enabled": true, "instances": [{"profile": "7g.80gb", "start": 0}]}},
  {"model": "h100-80gb", "mig": {"enabled": true}, "processes": [{"pid": 31337, "used_mib": 100}]},
  {"model": "h100-80gb"}]}`

func TestMigApply(t *testing.T) {
	nvml, journal := fakeNode(t, twoMIG)
	out, err := run(t, "mig", "apply", nvml, journal, "--yes", "--layout", "0=3g.40gb@4,2g.20gb@0,2g.20gb@2")
	if err != nil || !strings.Contains(out, "GPU 0: 7g.80gb@0 -> 3g.40gb@4,2g.20gb@0,2g.20gb@2") {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	// The fake GPU keeps its instances, as a real one does: the next run finds them.
	out, err = run(t, "mig", "apply", nvml, journal, "--yes", "--layout", "0=2g.20gb@0,2g.20gb@2,3g.40gb@4")
	if err != nil || !strings.Contains(out, "GPU 0: already 2g.20gb@0,2g.20gb@2,3g.40gb@4") {
		t.Fatalf("apply of the current layout: %v\n%s", err, out)
	}
	out, err = run(t, "mig", "apply", nvml, journal, "--dry-run", "--layout", "0=4g.40gb@0,3g.40gb@4")
	if err != nil || !strings.Contains(out, "GPU 0: would change 2g.20gb@0,2g.20gb@2,3g.40gb@4 -> 4g.40gb@0,3g.40gb@4") ||
		!strings.Contains(out, "1. check GPU 0: MIG mode on, no process") || !strings.Contains(out, "2. GPU 0: destroy 2g.20gb@0,2g.20gb@2,3g.40gb@4, create 4g.40gb@0,3g.40gb@4") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	desired := filepath.Join(t.TempDir(), "n1.json")
	os.WriteFile(desired, []byte(`{"version": 1, "node": "n1", "gpus": [{"index": 0, "model": "h100-80gb", "layout": "3g.40gb@4,2g.20gb@0,2g.20gb@2"}]}`), 0o644)
	out, err = run(t, "mig", "apply", nvml, journal, "--yes", "--desired", desired)
	if err != nil || !strings.Contains(out, "GPU 0: already 3g.40gb@4,2g.20gb@0,2g.20gb@2") || !strings.Contains(out, "nothing to do") {
		t.Fatalf("apply --desired of the current layout: %v\n%s", err, out)
	}
	out, err = run(t, "mig", "apply", nvml, journal, "--yes", "--layout", "0=7g.80gb@0")
	if err != nil || !strings.Contains(out, "GPU 0: 2g.20gb@0,2g.20gb@2,3g.40gb@4 -> 7g.80gb@0") {
		t.Fatalf("apply back to one instance: %v\n%s", err, out)
	}
}

func TestMigApplyRefuses(t *testing.T) {
	nvml, journal := fakeNode(t, twoMIG)
	for name, c := range map[string]struct {
		layouts []string
		want    string
	}{
		"busy GPU":        {[]string{"1=7g.80gb@0"}, "GPU busy: processes [31337]"},
		"MIG off":         {[]string{"2=7g.80gb@0"}, "MIG mode is off"},
		"overlap":         {[]string{"0=4g.40gb@0,3g.40gb@0"}, "overlaps"},
		"too many slices": {[]string{"0=4g.40gb@0,3g.40gb@4,1g.10gb@4"}, "overlaps"},
		"bad second GPU":  {[]string{"0=3g.40gb@0", "2=7g.80gb@0"}, "GPU 2"},
		"busy second GPU": {[]string{"0=3g.40gb@0", "1=7g.80gb@0"}, "GPU 1: GPU busy: processes [31337] run on it; drain the node and wait for its jobs first; nothing was changed"},
		"no such GPU":     {[]string{"9=7g.80gb@0"}, "this node has 3 GPUs"},
		"bad spec":        {[]string{"zero=7g"}, "want GPU=LAYOUT"},
		"same GPU twice":  {[]string{"0=7g.80gb@0", "0=3g.40gb@0"}, "given twice"},
		"unknown profile": {[]string{"0=5g.50gb@0"}, "5g.50gb"},
	} {
		args := []string{"mig", "apply", nvml, journal, "--yes"}
		for _, l := range c.layouts {
			args = append(args, "--layout", l)
		}
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, c.want)
		}
		if strings.Contains(out, "->") {
			t.Errorf("%s: something changed before the refusal:\n%s", name, out)
		}
	}
	if _, err := run(t, "mig", "apply", nvml, journal, "--yes"); err == nil || !strings.Contains(err.Error(), "no --layout") {
		t.Errorf("no layout: %v", err)
	}
	// Without --yes nothing runs, on a fake node too: no step is printed, no GPU changes.
	out, err := run(t, "mig", "apply", nvml, journal, "--layout", "0=3g.40gb@0")
	if code, msg := exitCode(err); code != 2 || !strings.Contains(msg.Error(), "pass --yes to apply, or --dry-run") || out != "" {
		t.Errorf("apply without --yes: status %d (%v), want 2 asking for --yes:\n%s", code, msg, out)
	}
}

func writeInventory(t *testing.T, dir string, nodes ...inventory.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, _, err := inventory.WriteNode(dir, n); err != nil {
			t.Fatal(err)
		}
	}
}

func a100Whole(node string) inventory.Node {
	n := inventory.Node{Name: node}
	for i := 0; i < 2; i++ {
		n.GPUs = append(n.GPUs, inventory.GPU{Index: i, Minor: i, Type: "a100", Name: "NVIDIA A100-SXM4-40GB", UUID: fmt.Sprintf("GPU-%s-%d", node, i), MemoryMiB: 40960, MIG: true,
			Instances: []inventory.MIGInstance{{Profile: "7g.40gb", MemoryMiB: 40192, Start: 0, Slices: 7}}})
	}
	n.GPUs = append(n.GPUs, inventory.GPU{Index: 2, Minor: 2, Type: "l4", Name: "NVIDIA L4", UUID: "GPU-" + node + "-l4", MemoryMiB: 23034})
	return n
}

func TestMigPlanClusterAndStatus(t *testing.T) {
	inv, out := t.TempDir(), filepath.Join(t.TempDir(), "desired") // --out is created
	writeInventory(t, inv, a100Whole("n2"))
	demand := filepath.Join(t.TempDir(), "demand")
	os.WriteFile(demand, []byte("10G 3 # three jobs of 10 GiB\n4G 2\n"), 0o644)
	got, err := run(t, "mig", "plan", "--inventory", inv, "--demand", demand, "--keep-whole", "0", "--out", out)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, got)
	}
	for _, want := range []string{
		"not planned: 1 GPU(s) out of MIG mode",
		"n2 gpu[0] (a100-40gb): 7g.40gb@0 -> 3g.20gb@0,1g.5gb@4,1g.5gb@5 = 1×3g.20gb (20096 MiB) + 2×1g.5gb (4864 MiB)",
		"n2 gpu[1] (a100-40gb): 7g.40gb@0 -> 3g.20gb@0,3g.20gb@4 = 2×3g.20gb (20096 MiB)",
		"serves 100.0 % of the demand (5 of 5), was 40.0 % (2)",
		"wrote " + filepath.Join(out, "n2.json"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan output lacks %q:\n%s", want, got)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "n2.json"))
	if err != nil || !strings.Contains(string(b), `"version": 1`) {
		t.Fatalf("desired file: %v\n%s", err, b)
	}
	st, err := run(t, "mig", "status", "--desired", out, "--inventory", inv)
	if code, _ := exitCode(err); code != 1 || !strings.Contains(st, "n2    0    differs  3g.20gb@0,1g.5gb@4,1g.5gb@5  7g.40gb@0") || !strings.Contains(st, "2 GPU(s) not yet as desired") {
		t.Errorf("status: %v\n%s", err, st)
	}
	// Once the node has the layout, status agrees and planning again changes nothing.
	n := a100Whole("n2")
	d, _ := mig.DecodeDesired(b)
	want, _, _ := d.Layouts()
	for i := range want {
		n.GPUs[i].Instances = nil
		for _, pl := range want[i] {
			n.GPUs[i].Instances = append(n.GPUs[i].Instances, inventory.MIGInstance{Profile: pl.Profile, Start: pl.Start, MemoryMiB: 4864})
		}
	}
	writeInventory(t, inv, n)
	st, err = run(t, "mig", "status", "--desired", out, "--inventory", inv)
	if err != nil || strings.Contains(st, "differs") || !strings.Contains(st, "n2    1    ok ") {
		t.Errorf("status after apply: %v\n%s", err, st)
	}
	got, err = run(t, "mig", "plan", "--inventory", inv, "--demand", demand, "--keep-whole", "0")
	if err != nil || !strings.Contains(got, "0 of 2 MIG GPUs change") {
		t.Errorf("replanning: %v\n%s", err, got)
	}
	os.WriteFile(filepath.Join(out, "n2.json"), []byte(`{"version": 2, "node": "n2", "gpus": []}`), 0o644)
	if _, err := run(t, "mig", "status", "--desired", out, "--inventory", inv); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a desired file of another version was read: %v", err)
	}
}

func TestQueueDemand(t *testing.T) {
	dir := t.TempDir()
	squeue := filepath.Join(dir, "squeue")
	os.WriteFile(squeue, []byte("#!/bin/sh\nprintf '21|gpu|gres/shard:12|(null)|2026-11-30T20:00:00\\n22|gpu|gres/gpu:3g.20gb:2|(null)|2026-11-30T20:00:01\\n23|gpu|gres/gpu:1|(null)|2026-11-30T20:00:02\\n'\n"), 0o755)
	ds, err := queueDemand(context.Background(), slurmcli.Runner{Path: squeue, Timeout: 10 * time.Second}, 1024)
	want := []mig.Demand{{MiB: 12 * 1024, Weight: 1}, {MiB: 20096, Weight: 2}}
	if err != nil || fmt.Sprint(ds) != fmt.Sprint(want) {
		t.Errorf("queueDemand = %v, %v; want %v (the whole-GPU job carries no size)", ds, err, want)
	}
}

// TestMigPlanFromHistory plans from the jobs a gpumemd recorded in its SQLite history:
// the shard and MIG jobs of the window count, whole-GPU jobs and older ones do not.
func TestMigPlanFromHistory(t *testing.T) {
	inv := t.TempDir()
	writeInventory(t, inv, a100Whole("n2"))
	db := filepath.Join(t.TempDir(), "history.db")
	s, err := history.Open(db, history.Options{KeepJobs: 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const gib = 1 << 30
	now := time.Now()
	rec := func(at time.Time, jobs ...usage.Job) {
		if err := s.Record(at, jobs); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-30 * 24 * time.Hour)
	rec(old, usage.Job{ID: "1", Kind: usage.KindShard, Alloc: 30 * gib, Used: gib, GPUs: []usage.JobGPU{{GPU: 0}}})
	rec(old.Add(time.Minute))
	var recent []usage.Job
	for i := 0; i < 3; i++ {
		recent = append(recent, usage.Job{ID: fmt.Sprint(10 + i), Kind: usage.KindShard, Alloc: 10 * gib, Used: 2 * gib, GPUs: []usage.JobGPU{{GPU: 0}}})
	}
	recent = append(recent, usage.Job{ID: "20", Kind: usage.KindGPU, Alloc: 40 * gib, Used: 30 * gib, GPUs: []usage.JobGPU{{GPU: 1}}})
	rec(now.Add(-time.Hour), recent...)
	rec(now.Add(-time.Hour + time.Minute))
	s.Close()

	got, err := run(t, "mig", "plan", "--inventory", inv, "--from-history", db, "--history-window", "168h", "--keep-whole", "0")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, got)
	}
	// Three 10 GiB jobs of the last week; the 30 GiB one is a month old, the whole-GPU
	// one asked for no size.
	for _, want := range []string{"serves 100.0 % of the demand (3 of 3)", "requests ≤ 20096 MiB (3g.20gb): 3 of 3 served"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	got, err = run(t, "mig", "plan", "--inventory", inv, "--from-history", db, "--history-window", "1000h", "--history-size", "peak", "--keep-whole", "0")
	if err != nil || !strings.Contains(got, "of the demand (4 of 4)") || !strings.Contains(got, "(1g.5gb): 4 of 4 served") {
		t.Errorf("a 1000h window by peak should count four jobs of at most 2 GiB: %v\n%s", err, got)
	}
	for _, bad := range [][]string{
		{"--from-history", filepath.Join(t.TempDir(), "none.db")},
		{"--from-history", db, "--history-size", "mean"},
		{"--from-history", db, "--history-window", "0s"},
		{"--from-history", db, "--history-weight", "-1"},
	} {
		args := append([]string{"mig", "plan", "--inventory", inv}, bad...)
		if out, err := run(t, args...); err == nil {
			t.Errorf("%v accepted:\n%s", bad, out)
		}
	}
}

// TestMigConfigSection: gpumem.conf's [mig] KeepWhole is the default of --keep-whole,
// and the flag wins over it.
func TestMigConfigSection(t *testing.T) {
	inv := t.TempDir()
	writeInventory(t, inv, a100Whole("n2"))
	conf := filepath.Join(t.TempDir(), "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\n[mig]\nKeepWhole = 0\n"), 0o644)
	fromFile, err := run(t, "mig", "plan", "--config", conf, "--inventory", inv, "10G", "10G", "10G", "4G", "4G")
	if err != nil || !strings.Contains(fromFile, "2 of 2 MIG GPUs change") {
		t.Fatalf("KeepWhole = 0 from the file should free both GPUs: %v\n%s", err, fromFile)
	}
	flag, err := run(t, "mig", "plan", "--config", conf, "--keep-whole", "0.5", "--inventory", inv, "10G", "10G", "10G", "4G", "4G")
	if err != nil || !strings.Contains(flag, "1 of 2 MIG GPUs change") {
		t.Fatalf("--keep-whole 0.5 should win over the file and keep one GPU whole: %v\n%s", err, flag)
	}
	os.WriteFile(conf, []byte("[mig]\nKeepWhole = most\n"), 0o644)
	if _, err := run(t, "mig", "plan", "--config", conf, "--inventory", inv, "20G"); err == nil || !strings.Contains(err.Error(), "want a share from 0 to 1") {
		t.Fatalf("a bad [mig] key: %v", err)
	}
}
