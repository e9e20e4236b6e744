package sim

import (
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/trace"
)

// sharedTrace loads the Alibaba trace, or skips: it lives beside the repository, not in it.
func sharedTrace(t testing.TB) (string, []trace.Node) {
	t.Helper()
	dir, err := trace.FindDir()
	if err != nil {
		t.Skipf("Alibaba trace not available (%v); the fixture tests still run", err)
	}
	nodes, err := trace.LoadNodes(filepath.Join(dir, trace.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, nodes
}

func workload(t testing.TB, dir, name string) Workload {
	t.Helper()
	pods, err := trace.LoadPods(filepath.Join(dir, trace.WorkloadFile(name)))
	if err != nil {
		t.Fatal(err)
	}
	return Workload{Name: name, Pods: pods}
}
