package placement

import "sort"

// BestFit packs: the node whose leftover share, 0.5*CPU/nodeCPU + 0.5*GPU/nodeGPU after
// placing, is least, then on it the tightest devices. This is the best-fit baseline of
// the FGD paper (Weng et al., ATC '23), so a trace replay compares with its figures.
type BestFit struct{}

func (BestFit) Name() string { return "best-fit" }

func (BestFit) Place(s *State, d *Demand) (Choice, bool) { return s.scored(d, true) }

// Spread balances: the node with the most leftover share, then its least loaded devices.
type Spread struct{}

func (Spread) Name() string { return "spread" }

func (Spread) Place(s *State, d *Demand) (Choice, bool) { return s.scored(d, false) }

// scored returns the node with the least (tight) or most (!tight) leftover share; ties go
// to the lower node index, so results are repeatable.
func (s *State) scored(d *Demand, tight bool) (Choice, bool) {
	best, found := Choice{}, false
	var bestScore float64
	var buf [16]int
	for n := range s.Nodes {
		if !s.mayFit(n, d) {
			continue
		}
		c, ok := s.pickDevices(n, d, tight, buf[:0])
		if !ok {
			continue
		}
		sc := s.Leftover(&c, d)
		if !found || (tight && sc < bestScore) || (!tight && sc > bestScore) {
			c.Devices = append([]int(nil), c.Devices...)
			best, bestScore, found = c, sc, true
		}
	}
	return best, found
}

// Leftover is the share of node c.Node left after placing d as c: half the CPU fraction
// plus half the GPU fraction, each 0 where the node has none of it.
func (s *State) Leftover(c *Choice, d *Demand) float64 {
	nd := &s.Nodes[c.Node]
	var cpu, gpu float64
	if nd.CPU > 0 {
		cpu = float64(nd.CPU-nd.UsedCPU-d.CPU) / float64(nd.CPU)
	}
	var capacity, free int64
	for i := range nd.Devices {
		capacity += nd.Devices[i].Capacity
		free += nd.Devices[i].Free()
	}
	for _, i := range c.Devices {
		if c.Kind == Shard {
			free -= d.Units
		} else {
			free -= nd.Devices[i].Free()
		}
	}
	if capacity > 0 {
		gpu = float64(free) / float64(capacity)
	}
	return 0.5*cpu + 0.5*gpu
}

// pickDevices chooses d's devices on node n: for the first allowed kind (Shard, MIG,
// Whole) that has enough, the tightest (least free after placing) or the loosest. devs is
// scratch space the result may use.
func (s *State) pickDevices(n int, d *Demand, tight bool, devs []int) (Choice, bool) {
	if !s.NodeAdmits(n, d) {
		return Choice{}, false
	}
	if d.GPUs == 0 {
		return Choice{Node: n}, true
	}
	nd := &s.Nodes[n]
	for _, k := range [...]Kind{Shard, MIG, Whole} {
		if d.kinds()&k == 0 {
			continue
		}
		devs = devs[:0]
		for i := range nd.Devices {
			if s.DeviceFits(n, i, d, k) {
				devs = append(devs, i)
			}
		}
		if len(devs) < d.GPUs {
			continue
		}
		sort.SliceStable(devs, func(a, b int) bool {
			fa, fb := nd.Devices[devs[a]].Free(), nd.Devices[devs[b]].Free()
			if tight {
				return fa < fb
			}
			return fa > fb
		})
		return Choice{Node: n, Kind: k, Devices: devs[:d.GPUs]}, true
	}
	return Choice{}, false
}
