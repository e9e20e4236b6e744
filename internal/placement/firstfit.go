package placement

// FirstFit is Slurm's native choice: the first node, then the first devices, that fit.
type FirstFit struct{}

func (FirstFit) Name() string { return "first-fit" }

func (FirstFit) Place(s *State, d *Demand) (Choice, bool) {
	x := s.index()
	return s.firstUnder(x, 1, 0, d)
}

// firstUnder walks the index left to right, skipping subtrees that cannot take d.
func (s *State) firstUnder(x *index, t, lo int, d *Demand) (Choice, bool) {
	if lo >= x.n || !x.sum[t].mayFit(d) {
		return Choice{}, false
	}
	if t >= x.size {
		return s.FirstDevices(t-x.size, d)
	}
	width := x.size >> bitsLen(t)
	if c, ok := s.firstUnder(x, 2*t, lo, d); ok {
		return c, true
	}
	return s.firstUnder(x, 2*t+1, lo+width, d)
}

// FirstDevices picks, on node n, the first devices that take d, trying the allowed kinds
// in the order Shard, MIG, Whole.
func (s *State) FirstDevices(n int, d *Demand) (Choice, bool) {
	if !s.NodeAdmits(n, d) {
		return Choice{}, false
	}
	if d.GPUs == 0 {
		return Choice{Node: n}, true
	}
	for _, k := range [...]Kind{Shard, MIG, Whole} {
		if d.kinds()&k == 0 {
			continue
		}
		var devs []int
		for i := range s.Nodes[n].Devices {
			if s.DeviceFits(n, i, d, k) {
				devs = append(devs, i)
				if len(devs) == d.GPUs {
					return Choice{Node: n, Kind: k, Devices: devs}, true
				}
			}
		}
	}
	return Choice{}, false
}
