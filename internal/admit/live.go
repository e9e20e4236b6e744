package admit

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
)

// NewState is the placement state of c with nothing allocated, in MiB: a full GPU is one
// device of its real memory (shareable unless exposed whole), a GPU in MIG mode one device
// per instance. Nodes keep their partitions as pools, their CPUs and host memory.
func NewState(c inventory.Cluster) *placement.State {
	nodes := make([]placement.Node, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		nd := placement.Node{Name: n.Name, Pools: n.Partitions, CPU: int64(n.CPUs), Mem: n.MemoryMiB}
		for _, g := range n.GPUs {
			if !g.MIG {
				nd.Devices = append(nd.Devices, placement.Device{GPU: g.Index, Model: g.Type, Capacity: g.MemoryMiB, Shareable: g.Shared()})
				continue
			}
			for _, in := range g.Instances {
				nd.Devices = append(nd.Devices, placement.Device{GPU: g.Index, Model: g.Type, Profile: in.Profile, Capacity: in.MemoryMiB})
			}
		}
		nodes = append(nodes, nd)
	}
	return placement.NewState(nodes)
}

// Demand is what a decision asks of one node in placement terms. A per-job GPU count is
// treated as that many GPUs on one node, the strictest reading, so a check never promises
// more than Slurm will find.
func (d Decision) Demand() placement.Demand {
	if !d.Changed {
		return placement.Demand{}
	}
	dm := placement.Demand{GPUs: int(d.GPUs), Units: d.Units, Kinds: d.Kind, Pools: d.Serving}
	if d.Kind == placement.Whole {
		dm.Models = []string{d.Model}
	}
	return dm
}

// Check says whether the decision fits the live state s now under the configured policy,
// would fit once running work drains, or never fits. Jobs without gpu:mem fit now.
func (a *Admitter) Check(d Decision, s *placement.State) (placement.Fit, error) {
	if !d.Changed {
		return placement.Now, nil
	}
	dm := d.Demand()
	pol, err := placement.ByName(a.opt.Policy, 1, a.shapes...)
	if err != nil {
		return placement.Never, fmt.Errorf("admit: %w", err)
	}
	return placement.Availability(s, pol, &dm), nil
}
