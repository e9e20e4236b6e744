package gresconf

import (
	"fmt"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// BenchmarkRender1000Nodes renders gres.conf for a cluster of 1000 nodes of 8 GPUs.
func BenchmarkRender1000Nodes(b *testing.B) {
	var c inventory.Cluster
	for i := 0; i < 1000; i++ {
		n := inventory.Node{Name: fmt.Sprintf("g%04d", i)}
		for g := 0; g < 8; g++ {
			n.GPUs = append(n.GPUs, inventory.GPU{Index: g, Minor: g, Type: "h100", MemoryMiB: 81559, Cores: "0-63"})
		}
		c.Nodes = append(c.Nodes, n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(c, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
