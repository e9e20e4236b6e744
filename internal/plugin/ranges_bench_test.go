package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// rangeNodes is the size of the cluster BenchmarkHostRanges runs on.
const rangeNodes = 64

// rangePlugin is job_submit's plugin on a cluster of rangeNodes nodes x0..x63, one H100
// each, every log line at verbose (a refusal is logged with the job's fields).
func rangePlugin(tb testing.TB) *Plugin {
	tb.Helper()
	dir := tb.TempDir()
	var c inventory.Cluster
	for i := range rangeNodes {
		c.Nodes = append(c.Nodes, inventory.Node{Name: fmt.Sprintf("x%d", i), Partitions: []string{"gpu"},
			GPUs: []inventory.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559}}})
	}
	body, err := c.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]string{
		"inventory.json": string(body),
		"slurm.conf":     fmt.Sprintf("PartitionName=gpu Nodes=x[0-%d] Default=YES\n", rangeNodes-1),
		"gpumem.conf": "InventoryPath = " + filepath.Join(dir, "inventory.json") + "\nSlurmConf = " + filepath.Join(dir, "slurm.conf") +
			"\nReloadInterval = 1h\nLogLevel = verbose\n",
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	p := New(filepath.Join(dir, "gpumem.conf"), "job_submit/gpumem", discardSink{}, AdmitCore)
	tb.Cleanup(p.Close)
	if p.st.Load().core == nil {
		tb.Fatalf("no core: %v", p.st.Load().invErr)
	}
	return p
}

// discardSink drops every line, once formatted.
type discardSink struct{}

func (discardSink) Error(string) {}
func (discardSink) Info(string)  {}
func (discardSink) Debug(string) {}

// rangeSizes are how many names the host lists of BenchmarkHostRanges name.
var rangeSizes = []int{1, 1000, 1000000}

// reqRange names n hosts from x0 on: beyond x63, names the cluster does not have.
func reqRange(n int) string { return fmt.Sprintf("x[0-%d]", n-1) }

// excRange names n hosts from x63 on: it keeps the job off x63 alone.
func excRange(n int) string { return fmt.Sprintf("x[63-%d]", 63+n-1) }

// BenchmarkHostRanges is job_submit's and job_modify's decision for a gpu:mem job whose
// --nodelist (-w) and --exclude (-x) name 1, 10^3 and 10^6 hosts, on a cluster of 64
// nodes: what the lists name beyond the cluster should cost nothing more.
// test/bench/ranges.sh runs it and prints each size's cost relative to 1 name.
func BenchmarkHostRanges(b *testing.B) {
	p := rangePlugin(b)
	cur := Fields{PerNode: "gres:shard:20", Partition: "gpu"}
	cases := []struct {
		name string
		run  func(n int) Verdict
	}{
		{"submit-w", func(n int) Verdict { return p.Submit(Fields{PerNode: "gres:gpu:mem:20g", ReqNodes: reqRange(n)}) }},
		{"submit-x", func(n int) Verdict { return p.Submit(Fields{PerNode: "gres:gpu:mem:20g", ExcNodes: excRange(n)}) }},
		{"modify-wx", func(n int) Verdict {
			return p.Modify(Fields{ReqNodes: reqRange(n), ExcNodes: excRange(n)}, &cur, false, Read)
		}},
		{"modify-size-wx", func(n int) Verdict {
			return p.Modify(Fields{PerNode: "gres:gpu:mem:30g", ReqNodes: reqRange(n), ExcNodes: excRange(n)}, &cur, false, Read)
		}},
	}
	for _, c := range cases {
		for _, n := range rangeSizes {
			b.Run(fmt.Sprintf("%s/names=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var refusal int
				for b.Loop() {
					refusal = len(c.run(n).Refusal)
				}
				b.ReportMetric(float64(refusal), "refusal-bytes")
			})
		}
	}
}
