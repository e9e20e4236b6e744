package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// TestPatternBoundSeesOneGPU: two shares of 600 milli cannot share the one GPU, and a
// whole GPU of 2 takes both devices of a node, so only one task fits each; the
// aggregate bound, which sees class totals, allows a full GPU and more.
func TestPatternBoundSeesOneGPU(t *testing.T) {
	dev := func(n int) []placement.Device {
		devs := make([]placement.Device, n)
		for i := range devs {
			devs[i] = placement.Device{GPU: i, Model: "A", Capacity: 1000, Shareable: true}
		}
		return devs
	}
	share := placement.Demand{CPU: 1, Mem: 1, GPUs: 1, Kinds: placement.Shard, Units: 600}
	for _, tc := range []struct {
		name  string
		nodes []placement.Node
		ds    []placement.Demand
		want  float64
	}{
		{"two shares, one GPU", []placement.Node{{Name: "a", CPU: 8, Mem: 8, Devices: dev(1)}}, []placement.Demand{share, share}, 600},
		{"shares of 600 and 300 on two GPUs", []placement.Node{{Name: "a", CPU: 8, Mem: 8, Devices: dev(2)}},
			[]placement.Demand{share, share, share, {CPU: 1, Mem: 1, GPUs: 1, Kinds: placement.Shard, Units: 300}}, 1500},
		{"CPU of one node is not pooled", []placement.Node{{Name: "a", CPU: 3, Mem: 8, Devices: dev(2)}, {Name: "b", CPU: 3, Mem: 8, Devices: dev(2)}},
			[]placement.Demand{{CPU: 2, Mem: 1, GPUs: 2, Kinds: placement.Whole, Units: 1000}, {CPU: 2, Mem: 1, GPUs: 2, Kinds: placement.Whole, Units: 1000}, share}, 4000},
		{"a 4-GPU task takes the node", []placement.Node{{Name: "a", CPU: 8, Mem: 8, Devices: dev(4)}},
			[]placement.Demand{{CPU: 2, Mem: 1, GPUs: 4, Kinds: placement.Whole, Units: 1000}, {CPU: 7, Mem: 1, GPUs: 1, Kinds: placement.Shard, Units: 300}}, 4000},
	} {
		if opt := optimum(placement.NewState(tc.nodes), tc.ds); float64(opt) != tc.want {
			t.Fatalf("%s: exhaustive optimum %d, the case wants %.0f", tc.name, opt, tc.want)
		}
		if b := PatternBound(tc.nodes, tc.ds, 300); b < tc.want-1e-6 || b > tc.want+10 {
			t.Errorf("%s: pattern bound %.2f, want %.0f to %.0f", tc.name, b, tc.want, tc.want+10)
		}
	}
}

// TestPatternBoundOnWiderNodes: nodes of 2-4 GPUs, where the per-node program has more
// than one way to combine shares, whole GPUs and multi-GPU tasks, and CPU is scarce;
// the bound is never below the exhaustive optimum, and it is exact on many instances.
func TestPatternBoundOnWiderNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 2))
	exact := 0
	const trials = 150
	for trial := range trials {
		var nodes []placement.Node
		for n := range 1 + rng.IntN(2) {
			devs := make([]placement.Device, 2+rng.IntN(3))
			for g := range devs {
				devs[g] = placement.Device{GPU: g, Model: "A", Capacity: trace.MilliPerGPU, Shareable: true}
			}
			nodes = append(nodes, placement.Node{Name: string(rune('a' + n)), CPU: int64(4 + rng.IntN(9)), Mem: 64, Devices: devs})
		}
		var ds []placement.Demand
		for range 3 + rng.IntN(3) {
			d := placement.Demand{CPU: int64(1 + rng.IntN(6)), Mem: int64(1 + rng.IntN(8))}
			if rng.IntN(2) == 0 {
				d.GPUs, d.Kinds, d.Units = 1, placement.Shard, int64(10*(20+rng.IntN(70)))
			} else {
				d.GPUs, d.Kinds, d.Units = 1+rng.IntN(4), placement.Whole, trace.MilliPerGPU
			}
			ds = append(ds, d)
		}
		opt := optimum(placement.NewState(nodes), ds)
		if atOptimum(t, trial, "pattern bound", PatternBound(nodes, ds, 2000), opt, nodes, ds) {
			exact++
		}
	}
	if exact < trials/2 {
		t.Fatalf("the pattern bound equals the optimum on only %d of %d instances", exact, trials)
	}
	t.Logf("pattern bound equal to the optimum on %d of %d instances", exact, trials)
}
