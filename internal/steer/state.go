package steer

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
)

// Cluster is the shard side of a cluster as steering sees it, in shards: one node per
// inventory node that has a shareable GPU, one device per shareable GPU, in gres.conf
// order (NVML index), which is the order Slurm's shard IDX counts in. Nodes with only
// MIG or whole-only GPUs are left out, and so are their weights: steering ranks the
// nodes shard jobs can use and leaves the rest as the admin set them.
type Cluster struct {
	State *placement.State
	node  map[string]int
	// gpuRec[node][i] is the device that gpu GRES index i of the node is, -1 for one
	// that is not shareable: gpu records count MIG instances too, shard records do not.
	gpuRec [][]int
}

// NewCluster builds the cluster with nothing allocated. perGPU is how many shards a
// GPU of that memory is (shard.PerGPU with the site's shard unit), so the counts
// match what gres.conf declares.
func NewCluster(c inventory.Cluster, perGPU func(memMiB int64) int64) *Cluster {
	cl := &Cluster{node: map[string]int{}}
	var nodes []placement.Node
	for _, n := range c.Nodes {
		nd := placement.Node{Name: n.Name, Pools: n.Partitions}
		var rec []int
		for _, g := range n.GPUs {
			if !g.Shared() {
				for range max(1, len(g.Instances)) {
					rec = append(rec, -1)
				}
				continue
			}
			rec = append(rec, len(nd.Devices))
			nd.Devices = append(nd.Devices, placement.Device{GPU: g.Index, Model: g.Type, Capacity: perGPU(g.MemoryMiB), Shareable: true})
		}
		if len(nd.Devices) == 0 {
			continue
		}
		cl.node[n.Name] = len(nodes)
		cl.gpuRec = append(cl.gpuRec, rec)
		nodes = append(nodes, nd)
	}
	cl.State = placement.NewState(nodes)
	return cl
}

// Apply records running jobs' use. A use on a node or GPU steering does not know (a
// MIG node, a GPU taken out of the inventory) is reported, not guessed at.
func (cl *Cluster) Apply(uses []Use) error {
	for _, u := range uses {
		n, ok := cl.node[u.Node]
		if !ok {
			if u.Whole {
				continue // whole GPUs on nodes without shards do not concern steering
			}
			return fmt.Errorf("steer: a running job holds shards on node %s, which has no shareable GPU in the inventory", u.Node)
		}
		nd := &cl.State.Nodes[n]
		if u.GPU == AnyGPU {
			cl.applyAny(nd, u)
			continue
		}
		if u.Whole {
			if u.GPU < 0 || u.GPU >= len(cl.gpuRec[n]) {
				return fmt.Errorf("steer: a running job holds gpu index %d of node %s, which has %d gpu records", u.GPU, u.Node, len(cl.gpuRec[n]))
			}
			if i := cl.gpuRec[n][u.GPU]; i >= 0 {
				nd.Devices[i].Used = nd.Devices[i].Capacity
			}
			continue
		}
		if u.GPU < 0 || u.GPU >= len(nd.Devices) {
			return fmt.Errorf("steer: a running job holds shard index %d of node %s, which has %d shareable GPUs", u.GPU, u.Node, len(nd.Devices))
		}
		dv := &nd.Devices[u.GPU]
		dv.Used = min(dv.Capacity, dv.Used+u.Shards)
	}
	cl.State.Reindex()
	return nil
}

// applyAny records a use whose GPU Slurm's record did not name (a job whose scontrol
// record was refused, read from squeue) on every GPU of the node it may be on: those of
// its per-GPU shard type, else of its model, else all. Steering then never pins a job
// onto a GPU that job may have filled; at worst it leaves room unused until the job
// ends.
func (cl *Cluster) applyAny(nd *placement.Node, u Use) {
	match := func(dv placement.Device) bool { return true }
	for _, dv := range nd.Devices {
		if u.Type != "" && shard.TypeName(dv.Model, dv.GPU) == u.Type {
			match = func(d placement.Device) bool { return d.GPU == dv.GPU }
			break
		}
		if u.Type != "" && dv.Model == u.Type {
			match = func(d placement.Device) bool { return d.Model == u.Type }
		}
	}
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		if !match(*dv) {
			continue
		}
		if u.Whole {
			dv.Used = dv.Capacity
		} else {
			dv.Used = min(dv.Capacity, dv.Used+u.Shards)
		}
	}
}

// Demands turns pending shard jobs into placement demands, in the same order.
func Demands(pending []Pending) []placement.Demand {
	out := make([]placement.Demand, len(pending))
	for i, p := range pending {
		out[i] = placement.Demand{GPUs: 1, Units: p.Shards, Kinds: placement.Shard, Pools: p.Partitions}
	}
	return out
}

// Stranded is the free shards of the cluster, and those of them on GPUs where none of
// sizes fits: memory no job of those sizes can use until something ends.
func Stranded(s *placement.State, sizes []int64) (free, stranded int64) {
	smallest := int64(-1)
	for _, z := range sizes {
		if smallest < 0 || z < smallest {
			smallest = z
		}
	}
	for n := range s.Nodes {
		for _, dv := range s.Nodes[n].Devices {
			f := dv.Free()
			free += f
			if smallest > 0 && f < smallest {
				stranded += f
			}
		}
	}
	return free, stranded
}
