package placement

import (
	"math/rand/v2"
	"testing"
)

// benchState is the benchmark cluster: 10,000 nodes of 8 GPUs in four models (one in MIG
// mode), with about half of the GPU memory and CPUs taken by committed jobs.
func benchState(b *testing.B) *State {
	r := rand.New(rand.NewPCG(7, 7))
	models := []struct {
		name string
		mib  int64
	}{{"a100", 40960}, {"a100-80", 81920}, {"h100", 81559}, {"h200", 143771}}
	nodes := make([]Node, 10000)
	for i := range nodes {
		m := models[i%len(models)]
		nd := Node{Name: "n" + itoa(i), Pools: []string{[]string{"gpu", "big"}[i%2]}, CPU: 128000, Mem: 1 << 20}
		for g := range 8 {
			if i%10 == 9 && g < 2 { // some nodes carry MIG GPUs: 3g + 2g + 2 x 1g each
				for _, c := range []int64{40448, 20096, 9984, 9984} {
					nd.Devices = append(nd.Devices, Device{GPU: g, Model: m.name, Profile: "mig", Capacity: c})
				}
				continue
			}
			nd.Devices = append(nd.Devices, Device{GPU: g, Model: m.name, Capacity: m.mib, Shareable: g%4 != 3})
		}
		nodes[i] = nd
	}
	s := NewState(nodes)
	for n := range s.Nodes {
		for i := range s.Nodes[n].Devices {
			if r.IntN(2) == 0 {
				continue
			}
			dv := &s.Nodes[n].Devices[i]
			d := Demand{CPU: 8000, Mem: 1 << 14, GPUs: 1, Units: dv.Capacity / int64(1+r.IntN(3))}
			k := Shard
			if !dv.Shareable || dv.Profile != "" {
				k = Whole
				if dv.Profile != "" {
					k = MIG
				}
			}
			if err := s.Commit(Choice{Node: n, Kind: k, Devices: []int{i}}, &d); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// benchDemands mixes small shards, MIG-sized asks, whole GPUs and multi-GPU jobs.
func benchDemands() []Demand {
	return []Demand{
		{CPU: 4000, Mem: 1 << 12, GPUs: 1, Units: 20480, Kinds: Shard},
		{CPU: 2000, Mem: 1 << 12, GPUs: 1, Units: 9000, Kinds: MIG | Shard},
		{CPU: 16000, Mem: 1 << 14, GPUs: 1, Units: 70000, Kinds: Whole},
		{CPU: 32000, Mem: 1 << 15, GPUs: 2, Units: 40000, Kinds: Whole, Models: []string{"h100"}},
		{CPU: 1000, Mem: 1 << 10, GPUs: 1, Units: 5120, Pools: []string{"big"}},
		{CPU: 64000, Mem: 1 << 16, GPUs: 4, Units: 81920, Kinds: Whole},
	}
}

func benchPolicy(b *testing.B, p Policy) {
	s := benchState(b)
	ds := benchDemands()
	s.index()
	b.ReportAllocs()
	b.ResetTimer()
	found := 0
	for i := 0; b.Loop(); i++ {
		if _, ok := p.Place(s, &ds[i%len(ds)]); ok {
			found++
		}
	}
	if found == 0 {
		b.Fatal("nothing placed")
	}
}

func BenchmarkPlaceFirstFit(b *testing.B) { benchPolicy(b, FirstFit{}) }
func BenchmarkPlaceBestFit(b *testing.B)  { benchPolicy(b, BestFit{}) }
func BenchmarkPlaceSpread(b *testing.B)   { benchPolicy(b, Spread{}) }

// BenchmarkPlaceCommitRelease is one job's whole life in the core: choose, commit, release.
func BenchmarkPlaceCommitRelease(b *testing.B) {
	s := benchState(b)
	ds := benchDemands()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d := &ds[i%len(ds)]
		c, ok := BestFit{}.Place(s, d)
		if !ok {
			continue
		}
		if err := s.Commit(c, d); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(c, d); err != nil {
			b.Fatal(err)
		}
	}
}

// pinState is the cluster test/bench/plugin.sh pins on: 10,000 nodes of 8 H100s of 79
// shards, no CPU or memory counted, a third of the GPUs partly taken.
func pinState() *State {
	nodes := make([]Node, 10000)
	for i := range nodes {
		nd := Node{Name: "gpu" + itoa(i), Pools: []string{"gpu"}}
		for g := range 8 {
			dv := Device{GPU: g, Model: "h100", Capacity: 79, Shareable: true}
			if (i+g)%3 == 0 {
				dv.Used = int64(10 + (i*7+g)%60)
			}
			nd.Devices = append(nd.Devices, dv)
		}
		nodes[i] = nd
	}
	s := NewState(nodes)
	s.Reindex()
	return s
}

// benchPins places and commits single-GPU shard jobs of four sizes, as pinning does.
func benchPins(b *testing.B, p Policy) {
	s := pinState()
	sizes := []int64{20, 10, 60, 5}
	if o, ok := p.(*Ours); ok {
		var ds []Demand
		for _, u := range sizes {
			ds = append(ds, Demand{GPUs: 1, Units: u, Kinds: Shard, Pools: []string{"gpu"}})
		}
		o.Prepare(s, ds)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d := Demand{GPUs: 1, Units: sizes[i%len(sizes)], Kinds: Shard, Pools: []string{"gpu"}}
		c, ok := p.Place(s, &d)
		if !ok {
			b.StopTimer()
			s = pinState() // full: start again
			b.StartTimer()
			continue
		}
		if err := s.Commit(c, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPinBestFit(b *testing.B) { benchPins(b, BestFit{}) }
func BenchmarkPinOurs(b *testing.B) {
	shapes, _ := ShapesOfSizes([]int64{10, 20, 40, 79})
	benchPins(b, NewOurs(shapes))
}
