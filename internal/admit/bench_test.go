package admit

import (
	"fmt"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// benchCluster: 10,000 nodes of 8 GPUs, four models, one node in ten with two GPUs in MIG
// mode, spread over four partitions. Admission never reads allocations, so "half
// allocated" changes nothing for it; the placement benchmarks cover live state.
func benchCluster() inventory.Cluster {
	models := []struct {
		name, typ string
		mib       int64
	}{{"NVIDIA A100-SXM4-40GB", "a100", 40960}, {"NVIDIA A100-SXM4-80GB", "a100-80", 81920},
		{"NVIDIA H100 80GB HBM3", "h100", 81559}, {"NVIDIA H200", "h200", 143771}}
	parts := []string{"gpu", "gpu-large", "inference", "train"}
	c := inventory.Cluster{Nodes: make([]inventory.Node, 10000)}
	for i := range c.Nodes {
		m := models[i%len(models)]
		n := inventory.Node{Name: fmt.Sprintf("n%05d", i), Partitions: []string{parts[i%len(parts)], "all"}, CPUs: 128, MemoryMiB: 1 << 20}
		for g := range 8 {
			gpu := inventory.GPU{Index: g, Minor: g, Name: m.name, Type: m.typ, MemoryMiB: m.mib}
			if i%10 == 9 && g < 2 {
				gpu.MIG = true
				gpu.Instances = []inventory.MIGInstance{{Profile: "3g.40gb", MemoryMiB: 40448, Start: 4}, {Profile: "2g.20gb", MemoryMiB: 20096}, {Profile: "1g.10gb", MemoryMiB: 9984, Start: 2}}
			}
			n.GPUs = append(n.GPUs, gpu)
		}
		c.Nodes[i] = n
	}
	return c
}

// benchJobs: shards, whole GPUs, narrowed to H200 partitions, other GRES kept, MIG per
// job with PreferMIG, and a job that is not ours (the fast path).
func benchJobs() []Job {
	return []Job{
		{TresPerNode: "gres:gpu:mem:20g", Partitions: []string{"gpu"}},              // shards
		{TresPerNode: "gres/gpu:mem:30g,gres/gpu:2", Partitions: []string{"train"}}, // whole GPUs
		{TresPerNode: "gres/gpu:mem:100g"},                                          // narrowed to H200 partitions
		{TresPerNode: "gres:license:x:1,gres:gpu:mem:9g", Partitions: []string{"inference"}},
		{TresPerJob: "gres/gpu:4", TresPerNode: "gres/gpu:mem:70g", Partitions: []string{"all"}},
		{TresPerNode: "gres:gpu:2"}, // not ours: the fast path
	}
}

func BenchmarkAdmit(b *testing.B) {
	jobs := benchJobs()
	a, err := New(benchCluster(), []string{"all"}, Options{PreferMIG: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := a.Admit(jobs[i%len(jobs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAdmitEach(b *testing.B) {
	a, err := New(benchCluster(), []string{"all"}, Options{PreferMIG: true})
	if err != nil {
		b.Fatal(err)
	}
	for i, j := range benchJobs() {
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Admit(j); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	c := benchCluster()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(c, nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
