package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeNode writes a one-GPU fake node whose NVML has the limit calls (answering answer,
// "" for the real behaviour) and returns its nvml spec and the log of set calls.
func fakeNode(t *testing.T, answer string) (spec, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "limits.log")
	n := map[string]any{
		"gpus":          []map[string]any{{"model": "h100-80gb"}},
		"memory_limits": map[string]any{"log": log, "answer": answer},
	}
	b, _ := json.Marshal(n)
	p := filepath.Join(dir, "node.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return "fake:" + p, log
}

func call(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	rc := run(args, &out)
	return out.String(), rc
}

// The device check's steps go through gpumem's own fence code: set puts exactly the
// hard limit on the given cgroup (and reads it back), get reports it, clear lifts it.
func TestSetGetClearThroughTheFencePackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake NVML, like the driver, takes limits from root only")
	}
	spec, log := fakeNode(t, "")
	cg := t.TempDir()
	if out, rc := call(t, "-nvml", spec, "-cgroup", cg, "-mib", "4096", "set"); rc != 0 || !strings.Contains(out, "set: SUCCESS") {
		t.Fatalf("set: rc %d, %q", rc, out)
	}
	if out, rc := call(t, "-nvml", spec, "-cgroup", cg, "get"); rc != 0 || !strings.Contains(out, "hard_mib=4096 ") {
		t.Fatalf("get after set: rc %d, %q", rc, out)
	}
	if out, rc := call(t, "-nvml", spec, "-cgroup", cg, "clear"); rc != 0 || !strings.Contains(out, "clear: SUCCESS") {
		t.Fatalf("clear: rc %d, %q", rc, out)
	}
	if out, rc := call(t, "-nvml", spec, "-cgroup", cg, "get"); rc == 0 && strings.Contains(out, "hard_mib=4096") {
		t.Fatalf("get after clear still reports the limit: %q", out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"namespace":"`+cg+`"`) || !strings.Contains(lines[0], `"hard":4294967296`) ||
		!strings.Contains(lines[1], `"hard":18446744073709551615`) {
		t.Fatalf("NVML calls: want the 4 GiB limit on %s and then its clearing, got\n%s", cg, b)
	}
}

// A driver that refuses says so, and the check exits 1 with NVML's answer, which
// fence.sh turns into UNSUPPORTED.
func TestRefusalIsReportedWithNVMLsAnswer(t *testing.T) {
	spec, _ := fakeNode(t, "ERROR_NOT_SUPPORTED")
	out, rc := call(t, "-nvml", spec, "-cgroup", t.TempDir(), "-mib", "4096", "set")
	if rc != 1 || !strings.Contains(out, "UNSUPPORTED") || !strings.Contains(out, "ERROR_NOT_SUPPORTED") {
		t.Fatalf("rc %d, %q; want 1 and UNSUPPORTED with ERROR_NOT_SUPPORTED", rc, out)
	}
	out, rc = call(t, "-nvml", spec, "-cgroup", t.TempDir(), "detect")
	if rc != 0 || !strings.Contains(out, "GPU 0 fence=none") {
		t.Fatalf("detect: rc %d, %q; want fence=none", rc, out)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{"set"}, {"-cgroup", "rel/dir", "get"}, {"-cgroup", "/x/../y", "get"}, {"-cgroup", "/x"}} {
		if _, rc := call(t, args...); rc != 2 {
			t.Errorf("%v: rc %d, want 2", args, rc)
		}
	}
}
