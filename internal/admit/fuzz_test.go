package admit

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/request"
	"github.com/gpumem/gpumem/internal/shard"
)

// FuzzAdmit: whatever a job carries, Admit returns (it runs inside slurmctld), leaves
// jobs it does not take untouched, and writes back strings that parse, hold no gpu:mem,
// and keep every other entry.
func FuzzAdmit(f *testing.F) {
	f.Add("gres:gpu:mem:20g", "", "gpu")
	f.Add("gres/gpu:mem:30g,gres/gpu:2", "gres/license:a:1", "gpu,big")
	f.Add("gres/gpu:mem:30g", "gres/gpu:4", "")
	f.Add("gres:license:x:1;gres:gpu:mem:1.5t", "", "mig")
	a, err := New(testCluster(), []string{"gpu", "mig"}, Options{Pools: []Pool{{Partition: "mig", MaxMiB: 10240}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, node, job, parts string) {
		j := Job{TresPerNode: node, TresPerJob: job}
		if parts != "" {
			j.Partitions = strings.Split(parts, ",")
		}
		d, err := a.Admit(j)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty refusal")
			}
			return
		}
		if !d.Changed {
			if !reflect.DeepEqual(d.Job, j) {
				t.Fatalf("unchanged decision rewrote the job: %+v -> %+v", j, d.Job)
			}
			return
		}
		for _, s := range []string{d.TresPerNode, d.TresPerJob} {
			tr, err := request.Parse(request.PerNode, s)
			if err != nil || tr.Find(request.GPUMem) >= 0 {
				t.Fatalf("rewrote %+v to %q: %v", j, s, err)
			}
		}
		for _, in := range []string{node, job} {
			tr, _ := request.Parse(request.PerNode, in)
			for _, e := range tr.Entries {
				if e.Kind == request.Other && e.Raw != "" && !strings.Contains(d.TresPerNode+","+d.TresPerJob, e.Raw) {
					t.Fatalf("lost %q rewriting %+v to %+v", e.Raw, j, d.Job)
				}
			}
		}
		if len(d.Serving) == 0 || d.GRES == "" {
			t.Fatalf("changed decision without GRES or partitions: %+v", d)
		}
		for _, p := range d.Serving {
			if !holds(testCluster(), p, d) {
				t.Fatalf("partition %s cannot hold %+v", p, d)
			}
		}
	})
}

// holds checks a decision against the inventory itself: the slice it names exists in
// partition p with at least the memory asked, every one of that kind.
func holds(c inventory.Cluster, p string, d Decision) bool {
	found := false
	for _, n := range c.Nodes {
		if !slices.Contains(n.Partitions, p) {
			continue
		}
		for _, g := range n.GPUs {
			switch {
			case d.Kind == placement.Shard && g.Shared() && shard.PerGPU(g.MemoryMiB, shard.DefaultUnitMiB)*shard.DefaultUnitMiB >= d.Units:
				found = found || d.Units >= d.MiB
			case d.Kind == placement.Whole && !g.MIG && g.Type == d.Model:
				if g.MemoryMiB < d.MiB {
					return false
				}
				found = true
			case d.Kind == placement.MIG && g.MIG:
				for _, in := range g.Instances {
					if in.Profile == d.Model {
						if in.MemoryMiB < d.MiB {
							return false
						}
						found = true
					}
				}
			}
		}
	}
	return found
}

func TestRefusalWithoutPartitions(t *testing.T) {
	a, err := New(inventory.Cluster{}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Admit(Job{TresPerNode: "gpu:mem:1g"})
	if err == nil || err.Error() != "gpumem: you asked for --gres=gpu:mem:1g, but gpumem knows no partition with GPUs" {
		t.Errorf("empty cluster: %v", err)
	}
}
