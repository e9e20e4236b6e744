package placement

import (
	"math/rand/v2"
	"testing"
)

// mixedCluster is a mixed cluster part-filled at random, with two GPU models.
func mixedCluster(rng *rand.Rand) *State {
	var nodes []Node
	for n := range 12 {
		nd := Node{Name: string(rune('a' + n)), CPU: 32000, Mem: 64000}
		for g := range 1 + rng.IntN(8) {
			model := "T4"
			if n%3 == 0 {
				model = "V100"
			}
			nd.Devices = append(nd.Devices, Device{GPU: g, Model: model, Capacity: 1000, Shareable: true})
		}
		nodes = append(nodes, nd)
	}
	return NewState(nodes)
}

func traceLikeDemand(rng *rand.Rand) Demand {
	d := Demand{CPU: int64(rng.IntN(8)) * 1000, Mem: int64(rng.IntN(4000))}
	switch rng.IntN(4) {
	case 0:
	case 1, 2:
		d.GPUs, d.Units, d.Kinds = 1, int64(1+rng.IntN(999)), Shard
	default:
		d.GPUs, d.Units, d.Kinds = 1+rng.IntN(4), 1000, Whole
	}
	if rng.IntN(5) == 0 {
		d.Models = []string{"V100"}
	}
	return d
}

// TestPoliciesNeverOverAllocate drives every policy of this file set with random
// demands until the cluster is full: each choice must pass State.Commit's checks, and a
// policy must place whenever first-fit can.
func TestPoliciesNeverOverAllocate(t *testing.T) {
	shapes := []Shape{{CPU: 2000, GPUs: 1, Units: 500, Freq: 0.6}, {CPU: 4000, GPUs: 2, Units: 1000, Freq: 0.4}}
	makers := []func() Policy{
		func() Policy { return NewRandom(7) },
		func() Policy { return NewGPUPacking(7) },
		func() Policy { return NewFGD(shapes, 7) },
		func() Policy { return NewOurs(shapes) },
	}
	for _, mk := range makers {
		rng := rand.New(rand.NewPCG(3, 4))
		p := mk()
		s := mixedCluster(rng)
		placed := 0
		for range 400 {
			d := traceLikeDemand(rng)
			c, ok := p.Place(s, &d)
			if _, can := (FirstFit{}).Place(s, &d); can != ok {
				t.Fatalf("%s: placed=%v where first-fit could=%v, demand %+v", p.Name(), ok, can, d)
			}
			if !ok {
				continue
			}
			if err := s.Commit(c, &d); err != nil {
				t.Fatalf("%s: invalid choice %+v for %+v: %v", p.Name(), c, d, err)
			}
			placed++
		}
		if placed < 50 {
			t.Errorf("%s placed only %d demands", p.Name(), placed)
		}
	}
}

// TestOursIsDeterministic: the same state and demands give the same choices.
func TestOursIsDeterministic(t *testing.T) {
	shapes := []Shape{{CPU: 2000, GPUs: 1, Units: 300, Freq: 1}}
	run := func() []Choice {
		rng := rand.New(rand.NewPCG(9, 9))
		s := mixedCluster(rng)
		p := NewOurs(shapes)
		var out []Choice
		for range 200 {
			d := traceLikeDemand(rng)
			if c, ok := p.Place(s, &d); ok && s.Commit(c, &d) == nil {
				out = append(out, c)
			}
		}
		return out
	}
	a, b := run(), run()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d vs %d choices", len(a), len(b))
	}
	for i := range a {
		if a[i].Node != b[i].Node || len(a[i].Devices) != len(b[i].Devices) {
			t.Fatalf("choice %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

// TestFragCacheFollowsOutsideChanges: the policy must notice state it did not change,
// such as a release and a commit by the caller, or nodes edited and then reindexed,
// instead of scoring a stale view.
func TestFragCacheFollowsOutsideChanges(t *testing.T) {
	shapes := []Shape{{CPU: 1000, GPUs: 1, Units: 1000, Freq: 1}}
	d := Demand{CPU: 1000, Mem: 10, GPUs: 1, Units: 500, Kinds: Shard}
	for _, how := range []string{"release and commit", "edit and reindex"} {
		p := NewOurs(shapes)
		s := twoNodes()
		if c, _ := p.Place(s, &d); c.Node != 0 {
			t.Fatalf("%s: first choice node %d, want 0", how, c.Node)
		}
		// Node 0's GPU frees up and node 1's becomes half used: the better place moves.
		half := Demand{GPUs: 1, Units: 500, Kinds: Shard}
		if how == "release and commit" {
			if err := s.Release(Choice{Node: 0, Kind: Shard, Devices: []int{0}}, &half); err != nil {
				t.Fatal(err)
			}
			if err := s.Commit(Choice{Node: 1, Kind: Shard, Devices: []int{0}}, &half); err != nil {
				t.Fatal(err)
			}
		} else {
			s.Nodes[0].Devices[0].Used, s.Nodes[1].Devices[0].Used = 0, 500
			s.Reindex()
		}
		if c, _ := p.Place(s, &d); c.Node != 1 {
			t.Fatalf("%s: after the change node %d, want 1", how, c.Node)
		}
	}
}
