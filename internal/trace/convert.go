package trace

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/placement"
)

// PlacementNodes turns trace nodes into placement nodes in the trace's units: CPU in
// milli-cores, memory in MiB, each GPU a shareable device of 1000 milli-GPU.
func PlacementNodes(nodes []Node) []placement.Node {
	out := make([]placement.Node, len(nodes))
	for i, n := range nodes {
		devs := make([]placement.Device, n.GPUs)
		for g := range devs {
			devs[g] = placement.Device{GPU: g, Model: n.Model, Capacity: MilliPerGPU, Shareable: true}
		}
		out[i] = placement.Node{Name: n.Name, CPU: n.CPUMilli, Mem: n.MemMiB, Devices: devs}
	}
	return out
}

// Demand is the pod's request to the placement core: a share of one GPU is a Shard of
// GPUMilli units; anything else takes whole GPUs.
func (p *Pod) Demand() placement.Demand {
	d := placement.Demand{CPU: p.CPUMilli, Mem: p.MemMiB, GPUs: p.NumGPU, Models: p.Models}
	switch {
	case p.NumGPU == 0:
	case p.Shared():
		d.Kinds, d.Units = placement.Shard, p.GPUMilli
	default:
		d.Kinds, d.Units = placement.Whole, MilliPerGPU
	}
	return d
}

// NodeIndex maps node names to their index, for comparing against reference decisions.
func NodeIndex(nodes []Node) map[string]int {
	m := make(map[string]int, len(nodes))
	for i, n := range nodes {
		m[n.Name] = i
	}
	return m
}

// Lookup finds a reference decision's node index, -1 for a failed task.
func Lookup(index map[string]int, d Decision) (int, error) {
	if d.Node == "" {
		return -1, nil
	}
	i, ok := index[d.Node]
	if !ok {
		return 0, fmt.Errorf("reference decision names node %q, not in the node list", d.Node)
	}
	return i, nil
}
