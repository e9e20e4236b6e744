package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130200000-abcdef123456"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abcdef1234567890"}}}, true
	}
	devel := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true
	}
	for _, c := range []struct {
		name string
		in   Info
		read func() (*debug.BuildInfo, bool)
		want string
	}{
		{"stamped wins", Info{Version: "v0.1.0", Revision: "1234567", GoVersion: "go1"}, vcs, "v0.1.0 (revision 1234567, go1)"},
		{"toolchain's record", Info{GoVersion: "go1"}, vcs, "v0.0.0-20261130200000-abcdef123456 (revision abcdef1234567890, go1)"},
		{"go test", Info{GoVersion: "go1"}, devel, "devel (revision unknown, go1)"},
		{"nothing", Info{GoVersion: "go1"}, none, "devel (revision unknown, go1)"},
	} {
		if got := fill(c.in, c.read).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStamp builds a program with the flags packaging/version.sh gives the real builds
// and checks that the version it reports is the one the script derived from git.
func TestStamp(t *testing.T) {
	script := filepath.Join("..", "..", "packaging", "version.sh")
	out, err := exec.Command("sh", script).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	want := strings.TrimSpace(string(out))
	rev, err := exec.Command("sh", script, "--revision").Output()
	if err != nil {
		t.Fatalf("%s --revision: %v", script, err)
	}
	ldflags, err := exec.Command("sh", script, "--ldflags").Output()
	if err != nil {
		t.Fatalf("%s --ldflags: %v", script, err)
	}
	bin := filepath.Join(t.TempDir(), "v")
	build := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", bin, "./testdata/printversion")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if w := want + " (revision " + strings.TrimSpace(string(rev)) + ", "; !strings.HasPrefix(string(got), w) {
		t.Errorf("stamped build says %q, want it to start %q", got, w)
	}
}
