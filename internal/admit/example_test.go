package admit_test

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/inventory"
)

func ExampleAdmitter_Admit() {
	h100 := inventory.GPU{Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559}
	cluster := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{h100, h100}},
	}}
	a, err := admit.New(cluster, []string{"gpu"}, admit.Options{})
	if err != nil {
		panic(err)
	}
	for _, j := range []admit.Job{
		{TresPerNode: "gres/gpu:mem:20g"},
		{TresPerNode: "gres/gpu:mem:40g,gres/gpu:2"},
		{TresPerNode: "gres/gpu:mem:100g"},
	} {
		d, err := a.Admit(j)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s | %s\n", d.TresPerNode, d.Explain)
	}
	// Output:
	// gres/shard:20 | gpu:mem:20g x1 per node -> shard:20 in gpu
	// gres/gpu:h100:2 | gpu:mem:40g x2 per node -> gpu:h100:2 in gpu
	// gpumem: you asked for --gres=gpu:mem:100g, but the largest GPU in partition gpu has 79.6 GiB = 81559 MiB (NVIDIA H100 80GB HBM3); up to gpu:mem:81559m per GPU fits there
}
