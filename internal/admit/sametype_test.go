package admit

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// TestSmallerGPUOfTheSameTypeNameRefused: Slurm gives a job asking gpu:a100:2 any GPUs
// of type a100 in the partition. Where 40 GB A100s carry the same type name as 80 GB
// ones on another node, a 60g request on two whole GPUs per node could land on the
// 40 GB ones: it must be refused, never translated to gpu:a100:2; a request the small
// ones hold still is.
func TestSmallerGPUOfTheSameTypeNameRefused(t *testing.T) {
	c := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "big", Partitions: []string{"gpu"}, GPUs: gpus(2, "NVIDIA A100-SXM4-80GB", "a100", 81920, inventory.SharingWhole)},
		{Name: "small", Partitions: []string{"gpu"}, GPUs: gpus(2, "NVIDIA A100-SXM4-40GB", "a100", 40960, inventory.SharingWhole)},
	}}
	a, err := New(c, []string{"gpu"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:60g,gres:gpu:2"})
	if err == nil {
		t.Fatalf("60g on two GPUs per node: translated to %q (%s); want a refusal, node small's A100s of the same type have 40 GB", d.TresPerNode, d.Explain)
	}
	if !strings.Contains(err.Error(), "gpu:mem:60g") {
		t.Errorf("refusal does not name the request: %v", err)
	}
	d, err = a.Admit(Job{TresPerNode: "gres:gpu:mem:30g,gres:gpu:2"})
	if err != nil || d.TresPerNode != "gres:gpu:a100:2" {
		t.Errorf("30g on two GPUs per node: %q, %v; want gres:gpu:a100:2", d.TresPerNode, err)
	}
}
