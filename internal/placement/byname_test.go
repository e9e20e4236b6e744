package placement

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestByNameMakesEveryPolicy(t *testing.T) {
	target, err := ShapesOfSizes([]int64{250, 500, 500, 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		p, err := ByName(name, 7, target...)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if p.Name() != name {
			t.Errorf("ByName(%q) made %q", name, p.Name())
		}
		s := twoNodes()
		d := Demand{GPUs: 1, Units: 500, Kinds: Shard}
		c, ok := p.Place(s, &d)
		if !ok {
			t.Fatalf("%s placed nothing on an idle cluster", name)
		}
		if err := s.Commit(c, &d); err != nil {
			t.Fatalf("%s chose an invalid placement: %v", name, err)
		}
	}
}

func TestByNameRefusesWhatItCannotMake(t *testing.T) {
	for _, name := range []string{"fgd", OursName} {
		if _, err := ByName(name, 1); err == nil || !strings.Contains(err.Error(), "target") {
			t.Errorf("ByName(%q) without target: err %v, want one asking for target shapes", name, err)
		}
	}
	_, err := ByName("tetris", 1)
	if err == nil || !strings.Contains(err.Error(), "tetris") || !strings.Contains(err.Error(), "gpu-packing") {
		t.Errorf("unknown policy: err %v, want it to name the policy and the known ones", err)
	}
}

func TestShapesOfSizesWeighsByCount(t *testing.T) {
	got, err := ShapesOfSizes([]int64{20480, 10240, 20480, 20480})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Units != 10240 || got[0].Freq != 0.25 || got[1].Units != 20480 || got[1].Freq != 0.75 || got[1].GPUs != 1 {
		t.Errorf("shapes %+v, want 10240 at 0.25 and 20480 at 0.75, one GPU each", got)
	}
	for _, bad := range [][]int64{nil, {1024, 0}, {-5}} {
		if _, err := ShapesOfSizes(bad); err == nil {
			t.Errorf("ShapesOfSizes(%v) accepted", bad)
		}
	}
}

// A leftover is an amount of the largest node, not a share of each node's own: a small
// node half free is tighter than a large one with more GPU units free.
func TestBestFitNormalisesByTheLargestNode(t *testing.T) {
	small := Node{Name: "small", Devices: []Device{{Capacity: 1000, Shareable: true}, {GPU: 1, Capacity: 1000, Shareable: true}}}
	large := Node{Name: "large"}
	for g := range 8 {
		large.Devices = append(large.Devices, Device{GPU: g, Capacity: 1000, Shareable: true, Used: 1000 * int64(min(1, max(0, 5-g)))})
	}
	s := NewState([]Node{large, small})
	d := Demand{GPUs: 1, Units: 500, Kinds: Shard}
	c, ok := BestFit{}.Place(s, &d)
	if !ok || s.Nodes[c.Node].Name != "small" {
		t.Fatalf("best fit chose %+v; want the small node (1500 units left against the large node's 2500)", c)
	}
	if got := s.Leftover(&c, &d); got != 0.5*1500.0/8000 {
		t.Errorf("leftover %v, want 0.5*1500/8000", got)
	}
}

// Fragmentation scores are in milli-GPU of the largest GPU, so the same cluster in MiB
// makes the same choices as in milli-GPU.
func TestFragPoliciesIgnoreTheUnit(t *testing.T) {
	build := func(unit int64) *State {
		var nodes []Node
		for n := range 6 {
			nd := Node{Name: string(rune('a' + n)), CPU: 64, Mem: 1 << 20}
			for g := range 2 + n%3*2 {
				nd.Devices = append(nd.Devices, Device{GPU: g, Capacity: 1000 * unit, Shareable: true})
			}
			nodes = append(nodes, nd)
		}
		return NewState(nodes)
	}
	for _, name := range []string{"fgd", OursName} {
		milli, mib := build(1), build(80)
		sizes := []int64{250, 500, 500, 1000}
		a, _ := ShapesOfSizes(sizes)
		b, _ := ShapesOfSizes([]int64{250 * 80, 500 * 80, 500 * 80, 1000 * 80})
		pa, _ := ByName(name, 3, a...)
		pb, _ := ByName(name, 3, b...)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 60 {
			u := sizes[r.IntN(len(sizes))]
			da := Demand{CPU: 1, GPUs: 1, Units: u, Kinds: Shard}
			db := da
			db.Units *= 80
			ca, oka := pa.Place(milli, &da)
			cb, okb := pb.Place(mib, &db)
			if oka != okb || oka && (ca.Node != cb.Node || ca.Devices[0] != cb.Devices[0]) {
				t.Fatalf("%s, demand %d: milli-GPU chose %+v (%v), MiB chose %+v (%v)", name, i, ca, oka, cb, okb)
			}
			if oka {
				if milli.Commit(ca, &da) != nil || mib.Commit(cb, &db) != nil {
					t.Fatal("commit refused")
				}
			}
		}
	}
}
