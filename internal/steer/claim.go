package steer

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/placement"
)

// ClaimQueue takes on cl the shards of the pending jobs Slurm will start without a pin
// at its next scheduling pass: in queue order, each job that is not pinned (or was
// unpinned in this pass), asks untyped shards and no node of its own, and fits now, on
// the GPU Slurm would give it: the node of lowest weight that takes it (inventory order
// among equals), its first GPU with room. It returns how many it claimed.
//
// Why: such a job starts within seconds (a job ends, Slurm's scheduler runs), before
// the next snapshot shows it. Until then job_submit counted that GPU free and pinned a
// newer job there, which then waited out --unpin-after for a GPU that Slurm had filled:
// 36-54 pins a run in the 64-node lab at twice its load (docs/steering.md). Where the
// guess of Slurm's GPU is wrong, one GPU is counted full that is free (a pin fewer) and
// the other as before; where a claimed job is held or waits on a dependency, its shards
// are counted taken and job_submit pins less: both cost steering, neither a pin that
// waits.
func (cl *Cluster) ClaimQueue(pending []Pending, unpinned map[string]bool, weight map[string]uint32) int {
	s := cl.State
	order := make([]int, len(s.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(weight[s.Nodes[a].Name], weight[s.Nodes[b].Name])
	})
	// The state only fills while claiming, so a request that found no GPU finds none
	// later in the pass: one scan of the nodes per shape, however long the queue (a user
	// can queue many jobs that fit nowhere).
	nowhere := map[string]bool{}
	claimed := 0
	for _, p := range pending {
		// A job unpinned in this pass goes to Slurm as untyped shards on any node.
		if !unpinned[p.ID] && (p.Pinned() || p.Type != "" || p.ReqNodes != "") {
			continue
		}
		shape := strconv.FormatInt(p.Shards, 10) + " " + strings.Join(p.Partitions, ",")
		if nowhere[shape] {
			continue
		}
		nowhere[shape] = true // until a node takes it
		d := placement.Demand{GPUs: 1, Units: p.Shards, Kinds: placement.Shard, Pools: p.Partitions}
		for _, n := range order {
			c, ok := s.FirstDevices(n, &d)
			if !ok {
				continue
			}
			dv := s.Nodes[n].Devices[c.Devices[0]]
			if cl.Take(s.Nodes[n].Name, dv.GPU, p.Shards) == nil {
				claimed++
			}
			delete(nowhere, shape)
			break
		}
	}
	return claimed
}
