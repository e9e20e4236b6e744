package steer

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// labGPUs are the 24.11 lab's shard GPUs: n1 with two 80 GiB H100s, n3 with four 22 GiB
// L4s; single puts each on a node of its own, where node weights steer to the GPU.
func labGPUs(single bool) *placement.State {
	gpus := []int64{80, 80, 22, 22, 22, 22}
	if single {
		var nodes []placement.Node
		for i, c := range gpus {
			nodes = append(nodes, placement.Node{Name: string(rune('a' + i)), Devices: []placement.Device{{Capacity: c, Shareable: true}}})
		}
		return placement.NewState(nodes)
	}
	n1, n3 := placement.Node{Name: "n1"}, placement.Node{Name: "n3"}
	for i, c := range gpus {
		if c == 80 {
			n1.Devices = append(n1.Devices, placement.Device{GPU: i, Capacity: c, Shareable: true})
		} else {
			n3.Devices = append(n3.Devices, placement.Device{GPU: i - 2, Capacity: c, Shareable: true})
		}
	}
	return placement.NewState([]placement.Node{n1, n3})
}

type outcome struct{ placed, shards, stranded int64 }

// replay arrives sizes one by one on s, nothing departing, a job that fits nowhere
// dropped (the trace protocol), each placed by pick; stranded counts free shards on GPUs
// that none of the dropped sizes (or, with none dropped, none of the sizes) fits.
func replay(t *testing.T, s *placement.State, sizes []int64, pick func(s *placement.State, d *placement.Demand, dropped []int64) (placement.Choice, bool)) outcome {
	var o outcome
	var dropped []int64
	for _, u := range sizes {
		d := placement.Demand{GPUs: 1, Units: u, Kinds: placement.Shard}
		c, ok := pick(s, &d, dropped)
		if !ok {
			dropped = append(dropped, u)
			continue
		}
		if err := s.Commit(c, &d); err != nil {
			t.Fatalf("%d shards: %v", u, err)
		}
		o.placed++
		o.shards += u
	}
	if len(dropped) == 0 {
		dropped = sizes
	}
	_, o.stranded = Stranded(s, dropped)
	return o
}

// TestSteeringModelOnTheTrace replays the lab's job stream (run.sh's, drawn by Go's
// generator) against a model of Slurm: the lowest-weight node that fits, first fit over
// its GPUs. It compares first fit by node order (Slurm's documented choice at equal
// weights), Slurm steered by each policy, and the policy placing directly. Best fit on
// single-GPU nodes is steered exactly: it must match the direct run job for job.
func TestSteeringModelOnTheTrace(t *testing.T) {
	dir, full, err := trace.TestData()
	if err != nil {
		t.Fatal(err)
	}
	if !full {
		t.Logf("the Alibaba trace is not here: the shares come from the repository's synthetic sample")
	}
	pods, err := trace.LoadPods(filepath.Join(dir, trace.WorkloadFile("default")))
	if err != nil {
		t.Fatal(err)
	}
	var shares []int64
	for _, p := range pods {
		if p.NumGPU == 1 {
			shares = append(shares, p.GPUMilli)
		}
	}
	for _, single := range []bool{false, true} {
		for _, ref := range []int64{40, 24, 22} {
			for _, name := range []string{"best-fit", "fgd", placement.OursName} {
				var ff, steered, direct outcome
				for seed := uint64(42); seed < 62; seed++ {
					r := rand.New(rand.NewPCG(seed, 0))
					var sizes []int64
					for total := int64(0); ; {
						x := (shares[r.IntN(len(shares))]*ref + 999) / 1000
						if float64(total+x) > 1.3*248 {
							break
						}
						total += x
						sizes = append(sizes, x)
					}
					target, err := placement.ShapesOfSizes(sizes)
					if err != nil {
						t.Fatal(err)
					}
					mk := func() placement.Policy {
						p, err := placement.ByName(name, 1, target...)
						if err != nil {
							t.Fatal(err)
						}
						return p
					}
					a := replay(t, labGPUs(single), sizes, func(s *placement.State, d *placement.Demand, _ []int64) (placement.Choice, bool) {
						return slurmPick(s, make([]uint32, len(s.Nodes)), d)
					})
					b := replay(t, labGPUs(single), sizes, func(s *placement.State, d *placement.Demand, _ []int64) (placement.Choice, bool) {
						return slurmPick(s, Weights(Order(s, nil, target, mk), 1), d)
					})
					c := replay(t, labGPUs(single), sizes, func(s *placement.State, d *placement.Demand, _ []int64) (placement.Choice, bool) {
						return mk().Place(s, d)
					})
					if name == "best-fit" && single && b != c {
						t.Fatalf("seed %d, ref %d: steered best fit %+v, direct %+v; steering best fit on single-GPU nodes is exact", seed, ref, b, c)
					}
					for _, x := range []struct{ sum, o *outcome }{{&ff, &a}, {&steered, &b}, {&direct, &c}} {
						x.sum.placed += x.o.placed
						x.sum.shards += x.o.shards
						x.sum.stranded += x.o.stranded
					}
				}
				t.Logf("single-GPU nodes %v, %2d GiB GPU reference, %-8s: first fit %+v, steered %+v, direct %+v (sums over 20 seeds)", single, ref, name, ff, steered, direct)
			}
		}
	}
}
