package request

import "testing"

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(PerNode, "gres/license:x:1,gres/gpu:mem:20g,gres/gpu:2"); err != nil {
			b.Fatal(err)
		}
	}
}
