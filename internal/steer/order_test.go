package steer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

// slurmPick is select/cons_tres as steering sees it: the lowest-weight node that can take
// d, node order among equal weights, and on it the first devices that fit.
func slurmPick(s *placement.State, w []uint32, d *placement.Demand) (placement.Choice, bool) {
	nodes := make([]int, len(s.Nodes))
	for i := range nodes {
		nodes[i] = i
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return int(w[a]) - int(w[b]) })
	for _, n := range nodes {
		if c, ok := s.FirstDevices(n, d); ok {
			return c, true
		}
	}
	return placement.Choice{}, false
}

// randomCluster is single-GPU and dual-GPU shard nodes of 80, 40 and 24 shards, partly used.
func randomCluster(r *rand.Rand) *placement.State {
	var nodes []placement.Node
	for n := range 3 + r.IntN(8) {
		nd := placement.Node{Name: string(rune('a' + n))}
		size := []int64{80, 40, 24}[r.IntN(3)]
		for g := range 1 + r.IntN(2) {
			nd.Devices = append(nd.Devices, placement.Device{GPU: g, Capacity: size, Used: r.Int64N(size + 1), Shareable: true})
		}
		nodes = append(nodes, nd)
	}
	return placement.NewState(nodes)
}

func policies(t *testing.T, target []placement.Shape) map[string]func() placement.Policy {
	out := map[string]func() placement.Policy{}
	for _, name := range []string{"first-fit", "best-fit", "fgd", placement.OursName} {
		out[name] = func() placement.Policy {
			p, err := placement.ByName(name, 1, target...)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	return out
}

func TestOrderIsAPermutationWithPendingFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	target, _ := placement.ShapesOfSizes([]int64{10, 20, 20})
	for range 200 {
		s := randomCluster(r)
		pending := []placement.Demand{{GPUs: 1, Units: 1 + r.Int64N(40), Kinds: placement.Shard}, {GPUs: 1, Units: 1 + r.Int64N(40), Kinds: placement.Shard}}
		for name, mk := range policies(t, target) {
			order := Order(s, pending, target, mk)
			sorted := slices.Sorted(slices.Values(order))
			for i, n := range sorted {
				if n != i {
					t.Fatalf("%s: order %v is not a permutation of %d nodes", name, order, len(s.Nodes))
				}
			}
			// The first pending job's wish is always granted: Slurm starts it where the
			// policy would.
			want, wok := mk().Place(s, &pending[0])
			got, gok := slurmPick(s, Weights(order, 1), &pending[0])
			if wok != gok || wok && got.Node != want.Node {
				t.Fatalf("%s: order %v; Slurm starts the first pending job on %d (%v), the policy on %d (%v)", name, order, got.Node, gok, want.Node, wok)
			}
		}
	}
}

// With one target shape and nothing pending, Slurm following the weights starts that
// shape exactly where the policy would place it; under best fit, every target size.
func TestWeightsMakeSlurmChooseAsThePolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		s := randomCluster(r)
		d := placement.Demand{GPUs: 1, Units: 1 + r.Int64N(60), Kinds: placement.Shard}
		target := []placement.Shape{{GPUs: 1, Units: d.Units, Freq: 1}}
		for name, mk := range policies(t, target) {
			want, wok := mk().Place(s, &d)
			got, gok := slurmPick(s, Weights(Order(s, nil, target, mk), 1), &d)
			if wok != gok || wok && got.Node != want.Node {
				t.Fatalf("%s, %d units: steered Slurm chose node %d (%v), the policy node %d (%v)", name, d.Units, got.Node, gok, want.Node, wok)
			}
		}
		sizes := []int64{1 + r.Int64N(20), 1 + r.Int64N(40), 1 + r.Int64N(80)}
		many, _ := placement.ShapesOfSizes(sizes)
		bf := func() placement.Policy { return placement.BestFit{} }
		w := Weights(Order(s, nil, many, bf), 1)
		for _, u := range sizes {
			d := placement.Demand{GPUs: 1, Units: u, Kinds: placement.Shard}
			want, wok := placement.BestFit{}.Place(s, &d)
			got, gok := slurmPick(s, w, &d)
			if wok != gok || wok && got.Node != want.Node {
				t.Fatalf("best fit, sizes %v, %d units: steered Slurm chose node %d (%v), best fit node %d (%v)", sizes, u, got.Node, gok, want.Node, wok)
			}
		}
	}
}

func TestUnorderedNodesGoFullestFirst(t *testing.T) {
	dev := func(used int64) []placement.Device {
		return []placement.Device{{Capacity: 24, Used: used, Shareable: true}}
	}
	s := placement.NewState([]placement.Node{{Name: "a", Devices: dev(10)}, {Name: "b", Devices: dev(20)}, {Name: "c", Devices: dev(0)}})
	target, _ := placement.ShapesOfSizes([]int64{10})
	// Spread wants 10 on c, the emptiest: c must come before a, the other node 10 fits;
	// b, which 10 does not fit, is free to come first, being the fullest.
	order := Order(s, nil, target, func() placement.Policy { return placement.Spread{} })
	if !slices.Equal(order, []int{1, 2, 0}) {
		t.Errorf("order %v; want b, c, a", order)
	}
	if w := Weights(order, 10); !slices.Equal(w, []uint32{12, 10, 11}) {
		t.Errorf("weights %v, want [12 10 11]", w)
	}
}

func TestWishesRefuseACycle(t *testing.T) {
	w := newWishes(3)
	if !w.grant(0, []int{0, 1}) || !w.grant(1, []int{1, 2}) {
		t.Fatal("consistent wishes refused")
	}
	if w.grant(2, []int{0, 2}) {
		t.Error("granted 2 before 0, though 0 comes before 1 before 2")
	}
	if got := w.order(func(a, b int) bool { return a > b }); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("order %v, want [0 1 2]", got)
	}
}
