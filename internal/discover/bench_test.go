package discover

import (
	"testing"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// BenchmarkNode is one discovery of a node through a mock or fake: the sidecar's cost
// per GresInterval apart from the driver's own latency.
func BenchmarkNode(b *testing.B) {
	for _, spec := range []string{
		"mock:dgxh100",                           // 8 full GPUs
		"fake:../nvmlsrc/testdata/mig-a100.json", // 3 GPUs, one with 4 MIG instances
	} {
		b.Run(spec, func(b *testing.B) {
			src, err := nvmlsrc.Open(spec)
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Node(src, Options{NodeName: "g1"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
