package admit

import (
	"sort"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/shard"
)

// slice is one kind of device a partition offers: a MIG profile or a full-GPU type.
type slice struct {
	name    string // MIG profile or Slurm GPU type
	product string // NVML product name, for messages
	mib     int64  // the smallest of its kind in the partition: what every one of them holds
	perNode int    // the most of it on one node
	total   int
}

// partition is what admission needs to know about one partition, computed once at New.
type partition struct {
	name      string
	shardMiB  int64 // the most one job's shards can hold on one GPU (0: no shared GPU)
	largest   int64 // memory of the largest physical GPU
	largestBy string
	migs      []slice // by memory, smallest first
	wholes    []slice // by memory, smallest first
}

// partitionsOf indexes the cluster by partition. A node in no partition can run no job,
// so it is left out.
func partitionsOf(c inventory.Cluster, unit int64) map[string]*partition {
	parts := map[string]*partition{}
	get := func(name string) *partition {
		if p := parts[name]; p != nil {
			return p
		}
		p := &partition{name: name}
		parts[name] = p
		return p
	}
	for _, n := range c.Nodes {
		for _, name := range n.Partitions {
			get(name).add(n, unit)
		}
	}
	for _, p := range parts {
		sortSlices(p.migs)
		sortSlices(p.wholes)
	}
	return parts
}

func (p *partition) add(n inventory.Node, unit int64) {
	migs, wholes := map[string]int{}, map[string]int{}
	for _, g := range n.GPUs {
		if g.MemoryMiB > p.largest {
			p.largest, p.largestBy = g.MemoryMiB, g.Name
		}
		if g.MIG {
			for _, in := range g.Instances {
				migs[in.Profile]++
				p.migs = merge(p.migs, in.Profile, g.Name, in.MemoryMiB)
			}
			continue
		}
		wholes[g.Type]++
		p.wholes = merge(p.wholes, g.Type, g.Name, g.MemoryMiB)
		if g.Shared() {
			p.shardMiB = max(p.shardMiB, shard.PerGPU(g.MemoryMiB, unit)*unit)
		}
	}
	count(p.migs, migs)
	count(p.wholes, wholes)
}

// merge records one device of kind name, keeping the smallest memory seen for the kind.
func merge(s []slice, name, product string, mib int64) []slice {
	for i := range s {
		if s[i].name == name {
			if mib < s[i].mib {
				s[i].mib, s[i].product = mib, product
			}
			return s
		}
	}
	return append(s, slice{name: name, product: product, mib: mib})
}

func count(s []slice, onNode map[string]int) {
	for i := range s {
		k := onNode[s[i].name]
		s[i].total += k
		s[i].perNode = max(s[i].perNode, k)
	}
}

func sortSlices(s []slice) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].mib != s[j].mib {
			return s[i].mib < s[j].mib
		}
		return s[i].name < s[j].name
	})
}
