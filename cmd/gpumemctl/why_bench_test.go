package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/why"
)

// BenchmarkWhy is gpumemctl why's work on a 1,000-node cluster of eight 80 GiB GPUs
// (Slurm 22.05's node records: per-GPU use comes from the running jobs) with a 10,000-job
// queue: read every node record, the pending queue and the running jobs' GPUs, and
// explain. The target is well under a second (docs/core-benchmarks.md); Slurm's own
// commands are not counted.
func BenchmarkWhy(b *testing.B) {
	var nodes, queue strings.Builder
	var vis []why.Visible
	for n := range 1000 {
		fmt.Fprintf(&nodes, "NodeName=g%04d Arch=x86_64 CoresPerSocket=8 Gres=gpu:h100:8(S:0-1),shard:h100:640(S:0-1) GresDrain=N/A GresUsed=gpu:h100:0(IDX:N/A),shard:h100:8(IDX:0-7) State=MIXED Partitions=gpu AllocTRES=cpu=8,gres/shard=400 Weight=1\n", n)
		for g := range 8 {
			vis = append(vis, why.Visible{Node: fmt.Sprintf("g%04d", n), GPU: g, Shards: 50})
		}
	}
	for i := range 10000 {
		fmt.Fprintf(&queue, "%d|%d|gres:shard:%d|1\n", 100000+i, 5000-i%97, 10+i%60)
	}
	q := slurmcli.QueuedJob{User: "ana", State: "PENDING", Reason: "Resources", TRESPerNode: "gres:shard:40", Partitions: []string{"gpu"}, Nodes: 1, Priority: 4000}
	b.ReportAllocs()
	for b.Loop() {
		in := why.Input{UnitMiB: 1024, Job: whyJob("99999", q, 1024, 1000)}
		for _, n := range slurmcli.ParseNodeGres(nodes.String()) {
			in.Nodes = append(in.Nodes, why.NodeOf(n.Name, n.State, n.Partitions, n.Gres, n.GresUsed, n.AllocTRES))
		}
		why.AddVisible(in.Nodes, vis)
		in.Ahead = parseAhead(queue.String(), in.Job, in.Nodes, 1024)
		if e := why.Explain(in); len(e.Causes) == 0 {
			b.Fatal("no cause")
		}
	}
}
