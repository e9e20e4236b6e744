package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/trace"
)

// TestSampleIsCurrent fails when the committed sample is not what the generator writes
// now: the generator changed without `go run ./internal/trace/samplegen`, or the files
// were edited by hand. It also reads the sample back with the trace's own readers.
func TestSampleIsCurrent(t *testing.T) {
	committed := filepath.Join("..", "testdata", "sample")
	for _, f := range []struct {
		name string
		rows func(w *bufio.Writer)
	}{{trace.NodesFile, nodes}, {trace.WorkloadFile("default"), pods}} {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		f.rows(w)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(committed, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s differs from what samplegen writes: run go run ./internal/trace/samplegen", f.name)
		}
	}
	ns, err := trace.LoadNodes(filepath.Join(committed, trace.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := trace.LoadPods(filepath.Join(committed, trace.WorkloadFile("default")))
	if err != nil {
		t.Fatal(err)
	}
	// The replay draws up to 1.3 times capacity from the workload only when the
	// workload alone asks for less than that.
	var demand int64
	for _, p := range ps {
		demand += p.GPUDemand()
	}
	capacity := int64(trace.TotalGPUs(ns)) * trace.MilliPerGPU
	if demand >= capacity {
		t.Errorf("the sample's tasks ask %d milli-GPU, the cluster has %d: the replay would draw nothing", demand, capacity)
	}
	t.Logf("sample: %d nodes, %d GPUs, %d tasks asking %.0f%% of the GPUs", len(ns), trace.TotalGPUs(ns), len(ps), 100*float64(demand)/float64(capacity))
}
