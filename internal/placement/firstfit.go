package placement

// FirstFit is Slurm's native choice: the first node, then the first devices, that fit.
type FirstFit struct{}

func (FirstFit) Name() string { return "first-fit" }

func (FirstFit) Place(s *State, d *Demand) (Choice, bool) {
	best, found := Choice{}, false
	limit := len(s.Nodes)
	for _, g := range s.index().groups {
		if !s.mayServe(g, d) {
			continue
		}
		if c, ok := s.firstIn(g, 1, 0, d, limit); ok {
			best, found, limit = c, true, c.Node
		}
	}
	return best, found
}

// firstIn walks group g left to right for the first node before limit that takes d,
// skipping subtrees that cannot.
func (s *State) firstIn(g *group, t, lo int, d *Demand, limit int) (Choice, bool) {
	if lo >= len(g.nodes) || g.nodes[lo] >= limit || !g.sum[t].mayFit(d) {
		return Choice{}, false
	}
	if t >= g.size {
		return s.FirstDevices(g.nodes[t-g.size], d)
	}
	if c, ok := s.firstIn(g, 2*t, lo, d, limit); ok {
		return c, true
	}
	return s.firstIn(g, 2*t+1, lo+g.width(t), d, limit)
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
		// Count first, so a node that cannot take d costs no allocation.
		fit := 0
		for i := range s.Nodes[n].Devices {
			if s.DeviceFits(n, i, d, k) {
				fit++
			}
		}
		if fit < d.GPUs {
			continue
		}
		devs := make([]int, 0, d.GPUs)
		for i := range s.Nodes[n].Devices {
			if len(devs) < d.GPUs && s.DeviceFits(n, i, d, k) {
				devs = append(devs, i)
			}
		}
		return Choice{Node: n, Kind: k, Devices: devs}, true
	}
	return Choice{}, false
}
