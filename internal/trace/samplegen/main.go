// Command samplegen writes the synthetic trace sample the tests use when the Alibaba
// trace (see trace.Source) is not on the machine: a node list and a "default" task list
// in the trace's own columns, from a fixed seed, so the same files come out every time.
//
// The rows are invented here, not taken from the Alibaba trace: its repository grants use
// for research and study but carries no license that allows redistributing its rows, so
// the repository ships this generator's output instead. The mix only resembles the
// trace's (mostly small GPU shares, some whole and multi-GPU tasks, CPU-only tasks, a
// few GPU model constraints, heterogeneous nodes); figures measured on it are not the
// published ones.
//
//	go run ./internal/trace/samplegen [-o internal/trace/testdata/sample]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/trace"
)

// nodeKind is one kind of node of the sample cluster.
type nodeKind struct {
	count, gpus int
	cpuMilli    int64
	memMiB      int64
	model       string
}

var kinds = []nodeKind{
	{20, 8, 96000, 786432, "G2"},
	{12, 2, 104000, 393216, "T4"},
	{6, 2, 64000, 262144, "P100"},
	{4, 8, 96000, 393216, "V100M16"},
	{2, 8, 96000, 786432, "V100M32"},
}

// tasks is the size of the default workload: its GPU demand is about four fifths of the
// cluster's, as in the trace, so that the replay's draws (up to 1.3 times capacity) come
// from it and the policies differ in what they leave stranded; small enough that every
// test replays it in well under a second.
const tasks = 300

func main() {
	out := flag.String("o", filepath.Join("internal", "trace", "testdata", "sample"), "folder to write the sample into")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	if err := write(filepath.Join(*out, trace.NodesFile), nodes); err != nil {
		fatal(err)
	}
	if err := write(filepath.Join(*out, trace.WorkloadFile("default")), pods); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "samplegen:", err)
	os.Exit(1)
}

func write(path string, rows func(*bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	rows(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func nodes(w *bufio.Writer) {
	fmt.Fprintln(w, "sn,cpu_milli,memory_mib,gpu,model")
	i := 0
	for _, k := range kinds {
		for range k.count {
			fmt.Fprintf(w, "sample-node-%04d,%d,%d,%d,%s\n", i, k.cpuMilli, k.memMiB, k.gpus, k.model)
			i++
		}
	}
}

// shares are the GPU shares (milli-GPU) a shared task draws from, most of them small.
var shares = []int64{50, 100, 100, 200, 200, 250, 300, 300, 400, 500, 500, 600, 700, 800, 900}

func pods(w *bufio.Writer) {
	r := rand.New(rand.NewPCG(2023, 42))
	fmt.Fprintln(w, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time")
	t := int64(0)
	for i := range tasks {
		var numGPU, milli int64
		cores := int64(1 + r.IntN(8))
		switch x := r.IntN(100); {
		case x < 15: // CPU only
			cores = int64(1 + r.IntN(16))
		case x < 80: // a share of one GPU
			numGPU, milli = 1, shares[r.IntN(len(shares))]
		case x < 95: // one whole GPU
			numGPU, milli = 1, 1000
			cores = int64(4 + r.IntN(12))
		default: // several whole GPUs
			numGPU, milli = []int64{2, 2, 4, 8}[r.IntN(4)], 1000
			cores = numGPU * int64(4+r.IntN(8))
		}
		spec := ""
		if numGPU > 0 && r.IntN(10) == 0 {
			spec = []string{"V100M16|V100M32", "T4", "G2"}[r.IntN(3)]
		}
		qos := []string{"LS", "BE", "Burstable"}[r.IntN(3)]
		t += int64(1 + r.IntN(600))
		fmt.Fprintf(w, "sample-pod-%04d,%d,%d,%d,%d,%s,%s,Running,%d,%d,%d\n",
			i, cores*1000, cores*4096, numGPU, milli, spec, qos, t, t+int64(60+r.IntN(86400)), t)
	}
}
