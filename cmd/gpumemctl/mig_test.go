package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func fakeNode(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return "--nvml=fake:" + p
}

const twoMIG = `{"gpus": [
  {"model": "h100", "mig": {"enabled": true, "instances": [{"profile": "7g.80gb", "start": 0}]}},
  {"model": "h100", "mig": {"enabled": true}, "processes": [{"pid": 31337, "used_mib": 100}]},
  {"model": "h100"}]}`

func TestMigApply(t *testing.T) {
	nvml := fakeNode(t, twoMIG)
	out, err := run(t, "mig", "apply", nvml, "--layout", "0=3g.40gb@4,2g.20gb@0,2g.20gb@2")
	if err != nil || !strings.Contains(out, "GPU 0: 7g.80gb@0 -> 3g.40gb@4,2g.20gb@0,2g.20gb@2") {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	out, err = run(t, "mig", "apply", nvml, "--layout", "0=7g.80gb@0")
	if err != nil || !strings.Contains(out, "GPU 0: already 7g.80gb@0") {
		t.Fatalf("apply of the current layout: %v\n%s", err, out)
	}
	out, err = run(t, "mig", "apply", nvml, "--dry-run", "--layout", "0=4g.40gb@0,3g.40gb@4")
	if err != nil || !strings.Contains(out, "would change") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
}

func TestMigApplyRefuses(t *testing.T) {
	nvml := fakeNode(t, twoMIG)
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
		args := []string{"mig", "apply", nvml}
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
	if _, err := run(t, "mig", "apply", nvml); err == nil || !strings.Contains(err.Error(), "no --layout") {
		t.Errorf("no layout: %v", err)
	}
}
