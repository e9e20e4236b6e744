package placement

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomNodes builds a small mixed cluster: shared full GPUs, whole-only GPUs, MIG
// instances, and nodes with and without CPU counts.
func randomNodes(r *rand.Rand, n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		nd := Node{Name: string(rune('a'+i%26)) + string(rune('0'+i/26)), CPU: int64(r.IntN(3) * 32), Mem: 1 << 20, Pools: []string{[]string{"p", "q"}[r.IntN(2)]}}
		for g := range r.IntN(5) {
			switch r.IntN(3) {
			case 0:
				nd.Devices = append(nd.Devices, Device{GPU: g, Model: "a100", Capacity: 40960, Shareable: true})
			case 1:
				nd.Devices = append(nd.Devices, Device{GPU: g, Model: "h100", Capacity: 81559, Shareable: r.IntN(2) == 0})
			default:
				for _, c := range []int64{40448, 20096, 9984} {
					nd.Devices = append(nd.Devices, Device{GPU: g, Model: "h100", Profile: "mig", Capacity: c})
				}
			}
		}
		nodes[i] = nd
	}
	return nodes
}

func randomDemand(r *rand.Rand) Demand {
	d := Demand{CPU: int64(r.IntN(9)), Mem: int64(r.IntN(3)) << 16, GPUs: r.IntN(3), Units: int64(1+r.IntN(80)) * 1024, Kinds: Kind(r.IntN(8))}
	if r.IntN(4) == 0 {
		d.Pools = []string{"q"}
	}
	if r.IntN(5) == 0 {
		d.Models = []string{"h100"}
	}
	return d
}

// naiveBest scans every node without the index: the reference the indexed search must
// match.
func naiveBest(s *State, d *Demand, tight bool) (int, float64, bool) {
	node, score, found := -1, 0.0, false
	var buf [16]int
	for n := range s.Nodes {
		c, ok := s.pickDevices(n, d, tight, buf[:0])
		if !ok {
			continue
		}
		sc := s.Leftover(&c, d)
		if !found || tight && sc < score || !tight && sc > score {
			node, score, found = n, sc, true
		}
	}
	return node, score, found
}

func TestPoliciesAgainstNaiveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		nodes := randomNodes(r, 1+r.IntN(40))
		s := NewState(nodes)
		initial := NewState(nodes)
		type placed struct {
			c Choice
			d Demand
		}
		var live []placed
		for op := range 400 {
			if len(live) > 0 && r.IntN(3) == 0 {
				k := r.IntN(len(live))
				if err := s.Release(live[k].c, &live[k].d); err != nil {
					t.Fatalf("round %d op %d: release: %v", round, op, err)
				}
				live = append(live[:k], live[k+1:]...)
				continue
			}
			d := randomDemand(r)
			for _, p := range []Policy{FirstFit{}, BestFit{}, Spread{}} {
				c, ok := p.Place(s, &d)
				checkAgainstNaive(t, s, &d, p, c, ok)
			}
			p := []Policy{FirstFit{}, BestFit{}, Spread{}}[r.IntN(3)]
			c, ok := p.Place(s, &d)
			if !ok {
				continue
			}
			if err := s.Commit(c, &d); err != nil {
				t.Fatalf("round %d: %s chose %+v for %+v, Commit refused: %v", round, p.Name(), c, d, err)
			}
			live = append(live, placed{c, d})
			checkState(t, s)
		}
		for i := len(live) - 1; i >= 0; i-- {
			if err := s.Release(live[i].c, &live[i].d); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(s.Nodes, initial.Nodes) {
			t.Fatalf("round %d: releasing everything did not restore the state", round)
		}
		checkState(t, s)
	}
}

func checkAgainstNaive(t *testing.T, s *State, d *Demand, p Policy, c Choice, ok bool) {
	t.Helper()
	first := -1
	for n := range s.Nodes {
		if _, fits := s.FirstDevices(n, d); fits {
			first = n
			break
		}
	}
	if ok != (first >= 0) {
		t.Fatalf("%s: found=%v for %+v, but a scan finds node %d", p.Name(), ok, d, first)
	}
	if !ok {
		return
	}
	if err := s.Clone().Commit(c, d); err != nil {
		t.Fatalf("%s: invalid choice %+v: %v", p.Name(), c, err)
	}
	switch p.(type) {
	case FirstFit:
		if c.Node != first {
			t.Fatalf("first-fit chose node %d, the first that fits is %d", c.Node, first)
		}
	case BestFit, Spread:
		tight := p.Name() == "best-fit"
		node, score, _ := naiveBest(s, d, tight)
		if got := s.Leftover(&c, d); got > score+scoreTie && tight || got < score-scoreTie && !tight {
			t.Fatalf("%s chose node %d (leftover %v); node %d has %v", p.Name(), c.Node, got, node, score)
		}
	}
}

// checkState asserts no over-allocation and an index equal to one built from scratch.
func checkState(t *testing.T, s *State) {
	t.Helper()
	for _, nd := range s.Nodes {
		if nd.UsedCPU > nd.CPU && nd.CPU > 0 || nd.UsedMem > nd.Mem || nd.UsedCPU < 0 || nd.UsedMem < 0 {
			t.Fatalf("node %s: CPU %d/%d, memory %d/%d", nd.Name, nd.UsedCPU, nd.CPU, nd.UsedMem, nd.Mem)
		}
		for _, dv := range nd.Devices {
			if dv.Used > dv.Capacity || dv.Used < 0 {
				t.Fatalf("node %s GPU %d: %d of %d units used", nd.Name, dv.GPU, dv.Used, dv.Capacity)
			}
		}
	}
	if s.idx != nil {
		fresh := &State{Nodes: s.Nodes}
		fresh.Reindex()
		if !reflect.DeepEqual(fresh.idx, s.idx) {
			t.Fatal("index differs from one rebuilt from the state")
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := NewState(randomNodes(r, 30))
	d := Demand{GPUs: 1, Units: 1024}
	c, ok := BestFit{}.Place(s, &d) // builds the index
	if !ok {
		t.Fatal("nothing fits an empty cluster")
	}
	cl := s.Clone()
	if err := cl.Commit(c, &d); err != nil {
		t.Fatal(err)
	}
	checkState(t, cl)
	checkState(t, s)
	if reflect.DeepEqual(s.Nodes[c.Node], cl.Nodes[c.Node]) {
		t.Error("commit on the clone changed the original")
	}
}
