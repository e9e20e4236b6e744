package discover

import (
	"testing"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// BenchmarkNodeDGXH100 is one discovery of an 8-GPU node through the mock, the
// sidecar's per-GresInterval cost apart from the driver's own latency.
func BenchmarkNodeDGXH100(b *testing.B) {
	src, err := nvmlsrc.Open("mock:dgxh100")
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
}

// BenchmarkNodeMIG discovers a fake node of 3 GPUs, one with 4 MIG instances.
func BenchmarkNodeMIG(b *testing.B) {
	src, err := nvmlsrc.Open("fake:../nvmlsrc/testdata/mig-a100.json")
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Node(src, Options{NodeName: "m1"}); err != nil {
			b.Fatal(err)
		}
	}
}
