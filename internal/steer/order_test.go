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
			// The pending jobs' nodes, as the policy places them one after another, lead.
			work, pol, k := s.Clone(), mk(), 0
			for i := range pending {
				d := pending[i]
				c, ok := pol.Place(work, &d)
				if !ok {
					continue
				}
				if err := work.Commit(c, &d); err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(order[:k], c.Node) {
					if order[k] != c.Node {
						t.Fatalf("%s: order %v; pending job %d planned on node %d should come at %d", name, order, i, c.Node, k)
					}
					k++
				}
			}
		}
	}
}

// With one target shape and nothing pending, Slurm following the weights starts that
// shape exactly where the policy would place it.
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
	}
}

func TestNodesNoShapeFitsGoLastFullestFirst(t *testing.T) {
	dev := func(used int64) []placement.Device {
		return []placement.Device{{Capacity: 24, Used: used, Shareable: true}}
	}
	s := placement.NewState([]placement.Node{{Name: "a", Devices: dev(10)}, {Name: "b", Devices: dev(20)}, {Name: "c", Devices: dev(0)}})
	target := []placement.Shape{{GPUs: 1, Units: 20, Freq: 1}}
	order := Order(s, nil, target, func() placement.Policy { return placement.BestFit{} })
	if !slices.Equal(order, []int{2, 1, 0}) {
		t.Errorf("order %v; want c (the only node 20 fits), then b (4 free), then a (14 free)", order)
	}
	if w := Weights(order, 10); !slices.Equal(w, []uint32{12, 11, 10}) {
		t.Errorf("weights %v, want [12 11 10]", w)
	}
}
