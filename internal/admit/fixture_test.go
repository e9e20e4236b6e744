package admit

import "github.com/gpumem/gpumem/internal/inventory"

func gpus(n int, name, typ string, mib int64, sharing string) []inventory.GPU {
	var out []inventory.GPU
	for i := range n {
		out = append(out, inventory.GPU{Index: i, Minor: i, Name: name, Type: typ, MemoryMiB: mib, Sharing: sharing})
	}
	return out
}

// testCluster: shared H100s and A100s in gpu, MIG GPUs in mig, whole H200s in big.
func testCluster() inventory.Cluster {
	h100mig := inventory.GPU{Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559, MIG: true, Instances: []inventory.MIGInstance{
		{Profile: "3g.40gb", MemoryMiB: 40448, Start: 4, Slices: 3},
		{Profile: "2g.20gb", MemoryMiB: 20096, Start: 0, Slices: 2},
		{Profile: "1g.10gb", MemoryMiB: 9984, Start: 2, Slices: 1},
		{Profile: "1g.10gb", MemoryMiB: 9984, Start: 3, Slices: 1},
	}}
	return inventory.Cluster{Nodes: []inventory.Node{
		{Name: "g1", Partitions: []string{"gpu"}, CPUs: 64, MemoryMiB: 512000, GPUs: gpus(2, "NVIDIA H100 80GB HBM3", "h100", 81559, "")},
		{Name: "g2", Partitions: []string{"gpu"}, CPUs: 64, MemoryMiB: 512000, GPUs: gpus(4, "NVIDIA A100-SXM4-40GB", "a100", 40960, "")},
		{Name: "m1", Partitions: []string{"mig"}, CPUs: 32, MemoryMiB: 256000, GPUs: []inventory.GPU{h100mig}},
		{Name: "b1", Partitions: []string{"big"}, CPUs: 128, MemoryMiB: 2048000, GPUs: gpus(8, "NVIDIA H200", "h200", 143771, inventory.SharingWhole)},
	}}
}
