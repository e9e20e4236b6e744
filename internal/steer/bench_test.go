package steer

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

// BenchmarkOrder is one steering pass on 1,000 nodes of eight 80-shard GPUs, half used,
// with 20 pending jobs and five target sizes: the cost of each --interval.
func BenchmarkOrder(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	nodes := make([]placement.Node, 1000)
	for n := range nodes {
		nodes[n].Name = "n" + string(rune('0'+n%10))
		for g := range 8 {
			nodes[n].Devices = append(nodes[n].Devices, placement.Device{GPU: g, Capacity: 80, Used: r.Int64N(81), Shareable: true})
		}
	}
	s := placement.NewState(nodes)
	var pending []placement.Demand
	for range 20 {
		pending = append(pending, placement.Demand{GPUs: 1, Units: 1 + r.Int64N(60), Kinds: placement.Shard})
	}
	target, _ := placement.ShapesOfSizes([]int64{5, 10, 10, 20, 20, 20, 40, 80})
	for _, name := range []string{"best-fit", placement.OursName} {
		b.Run(name, func(b *testing.B) {
			mk := func() placement.Policy { p, _ := placement.ByName(name, 1, target...); return p }
			for b.Loop() {
				Order(s, pending, target, mk)
			}
		})
	}
}
