package mig

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/inventory"
)

// LayoutOf is the layout a GPU of the inventory (or of discovery) has: its instances as
// placements, in the order listed. A GPU without instances has an empty, non-nil layout,
// which prints as "".
func LayoutOf(g inventory.GPU) Layout {
	l := Layout{}
	for _, in := range g.Instances {
		l = append(l, Placement{Profile: in.Profile, Start: in.Start})
	}
	return l
}

// ClusterGPUs are the inventory's GPUs a plan may change, and a note for each it may
// not: a GPU out of MIG mode keeps its mode (changing it needs a GPU reset), and a model
// the catalog does not know cannot be planned.
func ClusterGPUs(c inventory.Cluster) ([]GPU, []string) {
	var out []GPU
	var notes []string
	off := 0
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			if !g.MIG {
				off++
				continue
			}
			if _, err := Lookup(g.Name); err != nil {
				notes = append(notes, fmt.Sprintf("%s GPU %d: %v", n.Name, g.Index, err))
				continue
			}
			out = append(out, GPU{Node: n.Name, Index: g.Index, Model: g.Name, Layout: LayoutOf(g)})
		}
	}
	if off > 0 {
		notes = append(notes, fmt.Sprintf("%d GPU(s) out of MIG mode (whole or shard GPUs) stay as they are", off))
	}
	return out, notes
}

// CheckTarget checks one GPU's new layout against what the node has, without touching
// it: the GPU exists, MIG mode is on, and the layout is valid for its model where the
// catalog knows the model (NVML checks profiles and placements again when it applies).
func CheckTarget(gpus []inventory.GPU, g int, l Layout) error {
	if g >= len(gpus) {
		return fmt.Errorf("GPU %d: this node has %d GPUs", g, len(gpus))
	}
	if !gpus[g].MIG {
		return fmt.Errorf("GPU %d (%s): MIG mode is off: enable it first (nvidia-smi -i %d -mig 1, then reset the GPU)", g, gpus[g].Name, g)
	}
	if m, err := Lookup(gpus[g].Name); err == nil {
		if err := m.Validate(l); err != nil {
			return fmt.Errorf("GPU %d: %w", g, err)
		}
	}
	return nil
}
