package sim

import (
	"testing"

	"github.com/gpumem/gpumem/internal/trace"
)

// BenchmarkReplay is one run of the default workload, seed 42, per policy: the target
// is well under a second each.
func BenchmarkReplay(b *testing.B) {
	dir, _, nodes := testTrace(b)
	w := workload(b, dir, "default")
	pn := trace.PlacementNodes(nodes)
	capacity := int64(trace.TotalGPUs(nodes)) * trace.MilliPerGPU
	arr, err := Arrivals(w.Pods, capacity, 1.3, 42)
	if err != nil {
		b.Fatal(err)
	}
	target := NewTarget(w.Pods, 0.95)
	shapes := target.Shapes
	for _, name := range Policies {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p, err := NewPolicy(name, target, 42)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Replay(pn, arr, p, shapes, 131); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
