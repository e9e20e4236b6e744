package slurmconf

import (
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/inventory"
)

// Annotate fills in what the inventory takes from slurm.conf rather than NVML: each
// node's partitions, CPUs, RealMemory and Features. Nodes slurm.conf does not define are
// left as they are.
func (c *Conf) Annotate(cl *inventory.Cluster) {
	for i := range cl.Nodes {
		n := &cl.Nodes[i]
		sn, ok := c.Node(n.Name)
		if !ok {
			continue
		}
		n.Partitions = c.PartitionsOf(n.Name)
		if v, err := strconv.Atoi(sn.Get("cpus")); err == nil {
			n.CPUs = v
		}
		if v, err := strconv.ParseInt(sn.Get("realmemory"), 10, 64); err == nil {
			n.MemoryMiB = v
		}
		if f := sn.Get("features"); f != "" {
			n.Features = splitList(f)
		} else if f := sn.Get("feature"); f != "" {
			n.Features = splitList(f)
		}
		for j := range n.Features {
			n.Features[j] = strings.TrimSpace(n.Features[j])
		}
	}
}
