package placement

import "testing"

// threeOpen is three alike nodes with two GPUs each, all in use, opened in the order
// a, b, c; c has the least idle GPU. Against a CPU-only target every idle milli-GPU
// counts as fragmented, so any placement of the same demand scores the same on each
// node and only the tie-break decides.
func threeOpen(t *testing.T, p Policy) *State {
	t.Helper()
	mk := func(name string) Node {
		return Node{Name: name, CPU: 32000, Mem: 1 << 20, Devices: []Device{
			{Model: "T4", Capacity: 1000, Shareable: true}, {Model: "T4", Capacity: 1000, Shareable: true}}}
	}
	s := NewState([]Node{mk("a"), mk("b"), mk("c")})
	open := func(n int, units int64) {
		d := Demand{CPU: 1000, GPUs: 1, Units: units, Kinds: Shard}
		if err := s.Commit(Choice{Node: n, Kind: Shard, Devices: []int{0}}, &d); err != nil {
			t.Fatal(err)
		}
		// Let the policy see the node being put in use, as it would have chosen it.
		p.Place(s, &Demand{CPU: 1})
	}
	open(0, 100)
	open(1, 200)
	open(2, 900)
	return s
}

func TestOursTieBreaks(t *testing.T) {
	target := []Shape{{CPU: 1000, Freq: 1}}

	p := NewOurs(target)
	s := threeOpen(t, p)
	share := Demand{CPU: 1000, GPUs: 1, Units: 50, Kinds: Shard}
	if c, ok := p.Place(s, &share); !ok || c.Node != 2 || c.Devices[0] != 0 {
		t.Errorf("a share went to %+v, %v; want node c, the one with least idle GPU, on its used GPU", c, ok)
	}

	p = NewOurs(target)
	s = threeOpen(t, p)
	whole := Demand{CPU: 1000, GPUs: 1, Units: 1000, Kinds: Whole}
	if c, ok := p.Place(s, &whole); !ok || c.Node != 0 {
		t.Errorf("a whole GPU went to %+v, %v; want node a, the first put in use", c, ok)
	}

	// Idle nodes come after every node in use, and among themselves in a fixed order
	// that does not depend on their place in the list.
	nodes := func(names ...string) []Node {
		var out []Node
		for _, n := range names {
			out = append(out, Node{Name: n, CPU: 32000, Mem: 1 << 20, Devices: []Device{{Model: "T4", Capacity: 1000, Shareable: true}}})
		}
		return out
	}
	pick := func(names ...string) string {
		s := NewState(nodes(names...))
		c, ok := NewOurs(target).Place(s, &whole)
		if !ok {
			t.Fatalf("nothing placed on %v", names)
		}
		return s.Nodes[c.Node].Name
	}
	if x, y := pick("n1", "n2", "n3", "n4"), pick("n4", "n3", "n2", "n1"); x != y {
		t.Errorf("idle nodes n1-n4 gave %s in one order and %s in the other; want the same node", x, y)
	}
}
