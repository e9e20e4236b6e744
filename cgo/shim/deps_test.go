package shim

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPluginsLinkNoSidecarCode: the plugins run inside slurmctld, so they must not link
// what only the sidecar and the CLI need: NVML, gres.conf rendering and installing,
// discovery, the history database, or a way to start processes.
func TestPluginsLinkNoSidecarCode(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on $PATH, so the plugins' imports cannot be listed:", err)
	}
	const mod = "github.com/gpumem/gpumem/"
	cmd := exec.Command(goTool, "list", "-deps", mod+"cgo/jobsubmit", mod+"cgo/clifilter")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, p := range []string{"cgo/jobsubmit", "cgo/clifilter", "internal/plugin"} {
		if !slices.Contains(deps, mod+p) {
			t.Fatalf("go list -deps does not list %s; the check would see nothing:\n%s", p, out)
		}
	}
	banned := []string{mod + "internal/gresconf", mod + "internal/discover", mod + "internal/nvmlsrc", mod + "internal/history"}
	for _, d := range deps {
		if d == "os/exec" {
			t.Errorf("the plugins link os/exec")
		}
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				t.Errorf("the plugins link %s", d)
			}
		}
	}
}
