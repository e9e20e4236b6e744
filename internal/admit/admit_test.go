package admit

import (
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/refusal"
)

func TestAdmitTranslates(t *testing.T) {
	cases := []struct {
		name string
		opt  Options
		in   Job
		want Job
		kind placement.Kind
	}{
		{"shard 22.05 prefix", Options{}, Job{TresPerNode: "gres:gpu:mem:20g", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres:shard:20", Partitions: []string{"gpu"}}, placement.Shard},
		{"shard 23.11 prefix", Options{}, Job{TresPerNode: "gres/gpu:mem:20G", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres/shard:20", Partitions: []string{"gpu"}}, placement.Shard},
		{"shard rounds up to whole shards", Options{ShardUnitMiB: 2048}, Job{TresPerNode: "gres/gpu:mem:20gb", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres/shard:10", Partitions: []string{"gpu"}}, placement.Shard},
		{"other GRES kept", Options{}, Job{TresPerNode: "gres:license:x:1,gres:gpu:mem:20g;gres:nic:1", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres:license:x:1,gres:nic:1,gres:shard:20", Partitions: []string{"gpu"}}, placement.Shard},
		{"MIG by real MiB: 2g.20gb holds 19g", Options{PreferMIG: true}, Job{TresPerNode: "gres:gpu:mem:19g", Partitions: []string{"mig"}},
			Job{TresPerNode: "gres:gpu:2g.20gb:1", Partitions: []string{"mig"}}, placement.MIG},
		{"MIG by real MiB: 2g.20gb does not hold 20g", Options{PreferMIG: true}, Job{TresPerNode: "gres:gpu:mem:20g", Partitions: []string{"mig"}},
			Job{TresPerNode: "gres:gpu:3g.40gb:1", Partitions: []string{"mig"}}, placement.MIG},
		{"MIG when no shared GPU", Options{}, Job{TresPerNode: "gres:gpu:mem:9g", Partitions: []string{"mig"}},
			Job{TresPerNode: "gres:gpu:1g.10gb:1", Partitions: []string{"mig"}}, placement.MIG},
		{"two GPUs: smallest type with enough", Options{}, Job{TresPerNode: "gres:gpu:mem:20g,gres:gpu:2", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres:gpu:a100:2", Partitions: []string{"gpu"}}, placement.Whole},
		{"two GPUs: only the bigger type holds", Options{}, Job{TresPerNode: "gres:gpu:mem:60g,gres:gpu:2", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres:gpu:h100:2", Partitions: []string{"gpu"}}, placement.Whole},
		{"per-job GPU count stays per job", Options{}, Job{TresPerNode: "gres/gpu:mem:30g", TresPerJob: "gres/gpu:3", Partitions: []string{"gpu"}},
			Job{TresPerNode: "", TresPerJob: "gres/gpu:a100:3", Partitions: []string{"gpu"}}, placement.Whole},
		{"one GPU per job becomes shards per node", Options{}, Job{TresPerJob: "gres/gpu:mem:30g", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres/shard:30", Partitions: []string{"gpu"}}, placement.Shard},
		{"narrowed to the partition that holds it", Options{}, Job{TresPerNode: "gres:gpu:mem:100g"},
			Job{TresPerNode: "gres:gpu:h200:1", Partitions: []string{"big"}}, placement.Whole},
		{"pinned type", Options{}, Job{TresPerNode: "gres:gpu:mem:20g,gres:gpu:h100:1", Partitions: []string{"gpu"}},
			Job{TresPerNode: "gres:gpu:h100:1", Partitions: []string{"gpu"}}, placement.Whole},
		{"pools route small requests", Options{Pools: []Pool{{Partition: "mig", MaxMiB: 10240}, {Partition: "gpu"}}}, Job{TresPerNode: "gres:gpu:mem:9g"},
			Job{TresPerNode: "gres:shard:9", Partitions: []string{"gpu"}}, placement.Shard},
		// PreferMIG breaks ties only: the two 1g.10gb instances run 2 such jobs at once,
		// the shared GPUs 32, so a burst is not funnelled onto the MIG node.
		{"pools with PreferMIG", Options{PreferMIG: true, Pools: []Pool{{Partition: "mig", MaxMiB: 10240}, {Partition: "gpu"}}}, Job{TresPerNode: "gres:gpu:mem:9g"},
			Job{TresPerNode: "gres:shard:9", Partitions: []string{"gpu"}}, placement.Shard},
		{"PreferMIG when the array runs as many at once", Options{PreferMIG: true, Pools: []Pool{{Partition: "mig", MaxMiB: 10240}, {Partition: "gpu"}}}, Job{TresPerNode: "gres:gpu:mem:9g", Array: "0-9%2"},
			Job{TresPerNode: "gres:gpu:1g.10gb:1", Partitions: []string{"mig"}, Array: "0-9%2"}, placement.MIG},
		{"pools pass big requests on", Options{PreferMIG: true, Pools: []Pool{{Partition: "mig", MaxMiB: 10240}, {Partition: "gpu"}}}, Job{TresPerNode: "gres:gpu:mem:30g"},
			Job{TresPerNode: "gres:shard:30", Partitions: []string{"gpu"}}, placement.Shard},
	}
	for _, c := range cases {
		a, err := New(testCluster(), []string{"gpu", "mig", "big"}, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		d, err := a.Admit(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !d.Changed || d.Kind != c.kind || !reflect.DeepEqual(d.Job, c.want) {
			t.Errorf("%s:\n got %+v %v changed=%v (%s)\nwant %+v %v", c.name, d.Job, d.Kind, d.Changed, d.Explain, c.want, c.kind)
		}
	}
}

func TestAdmitLeavesOtherJobsAlone(t *testing.T) {
	a, err := New(testCluster(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []Job{{}, {TresPerNode: "gres:gpu:2", TresPerJob: "gres:gpu:h100:4", Partitions: []string{"x"}},
		{TresPerNode: "gres/shard:20,gres/license:mem:1"}, {TresPerTask: "cpu=4"},
		// Malformed for gpumem, but not gpu:mem: Slurm judges these, not gpumem.
		{TresPerNode: "gres:gpu:memory:x:y", TresPerJob: "gres:gpu:0"}} {
		d, err := a.Admit(j)
		if err != nil || d.Changed || !reflect.DeepEqual(d.Job, j) || d.Kind != 0 {
			t.Errorf("Admit(%+v) = %+v, %v; want it untouched", j, d, err)
		}
	}
}

func TestAdmitRefusals(t *testing.T) {
	a, err := New(testCluster(), []string{"gpu"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in  Job
		err string
	}{
		{Job{TresPerNode: "gres:gpu:mem:100g"},
			"gpumem: you asked for --gres=gpu:mem:100g, but the largest GPU in partition gpu has 79.6 GiB = 81559 MiB (NVIDIA H100 80GB HBM3); up to gpu:mem:81559m per GPU fits there. It fits in partition big (--partition=big)"},
		{Job{TresPerNode: "gres:gpu:mem:200g", Partitions: []string{"gpu", "mig"}},
			"gpumem: you asked for --gres=gpu:mem:200g, but the largest GPU in partition gpu has 79.6 GiB = 81559 MiB (NVIDIA H100 80GB HBM3); up to gpu:mem:81559m per GPU fits there; the largest GPU in partition mig has 79.6 GiB = 81559 MiB (NVIDIA H100 80GB HBM3); up to gpu:mem:40448m per GPU fits there (on MIG 3g.40gb of NVIDIA H100 80GB HBM3)"},
		{Job{TresPerNode: "gres:gpu:mem:60g,gres:gpu:4"},
			"gpumem: you asked for --gres=gpu:mem:60g --gpus-per-node=4, but in partition gpu, the most that fits for 4 GPUs on one node is gpu:mem:40g per GPU (NVIDIA A100-SXM4-40GB). It fits in partition big (--partition=big)"},
		{Job{TresPerNode: "gres:gpu:mem:10g,gres:gpu:5"},
			"gpumem: you asked for --gres=gpu:mem:10g --gpus-per-node=5, but partition gpu has no 5 GPUs of one type on one node. It fits in partition big (--partition=big)"},
		{Job{TresPerNode: "gres:gpu:mem:10g", Partitions: []string{"nosuch"}},
			"gpumem: you asked for --gres=gpu:mem:10g, but partition nosuch has no GPU node gpumem knows. It fits in partition big, gpu, mig (--partition=big)"},
		{Job{TresPerNode: "gres:gpu:mem:10g,gres:gpu:mem:20g"}, refusal.MemTwice()},
		{Job{TresPerNode: "gres:gpu:mem:10g", TresPerJob: "gres:gpu:mem:20g"}, refusal.MemTwice()},
		{Job{TresPerNode: "gres:gpu:mem:10g,gres:gpu:2", TresPerJob: "gres:gpu:2"},
			"give the number of GPUs once (--gpus-per-node=N, --gpus-per-task=N or --gpus=N) next to --gres=gpu:mem:20g"},
		{Job{TresPerTask: "gres/gpu:mem:10g"},
			"--gpus-per-task=mem:10g is not supported: GPU memory is asked per GPU with --gres=gpu:mem:20g, and the number of GPUs with --gpus-per-node, --gpus-per-task or --gpus"},
		{Job{TresPerNode: "gres/gpu:mem:10g", TresPerSocket: "gres/gpu:1"},
			"--gpus-per-socket=1 cannot be combined with --gres=gpu:mem: gpumem does not place GPUs by socket; give the GPU count with --gpus-per-node=N, --gpus-per-task=N or --gpus=N"},
		{Job{TresPerNode: "gres/gpu:mem:10"},
			`--gres entry "gres/gpu:mem:10" has a bad size: has no unit (k, m, g, t, kib..tib, kb..tb); e.g. gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t`},
	}
	for _, c := range cases {
		d, err := a.Admit(c.in)
		if err == nil || err.Error() != c.err {
			t.Errorf("Admit(%+v) = %+v\n got %v\nwant %s", c.in, d, err, c.err)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := []struct {
		opt Options
		err string
	}{
		{Options{ShardUnitMiB: -1}, "admit: shard unit -1 MiB; want a positive size such as 1024 (1 GiB)"},
		{Options{PlacementPolicy: "magic"}, `admit: unknown placement policy "magic"; known: first-fit, best-fit, spread, random, gpu-packing, fgd, gpumem`},
		{Options{Pools: []Pool{{Partition: "nope"}}}, `admit: pool partition "nope" has no GPU node in the inventory; known: big, gpu, mig`},
		{Options{Pools: []Pool{{Partition: "gpu", MinMiB: 10, MaxMiB: 5}}}, "admit: pool gpu: range 10..5 MiB; want 0 <= min <= max (max 0: no bound)"},
	}
	for _, c := range cases {
		_, err := New(testCluster(), nil, c.opt)
		if err == nil || err.Error() != c.err {
			t.Errorf("New(%+v)\n got %v\nwant %s", c.opt, err, c.err)
		}
	}
}
