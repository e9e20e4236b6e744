package placement

// BestFit packs: the node whose leftover, 0.5*CPU/maxCPU + 0.5*GPU/maxGPU after placing
// (maxima over the cluster's nodes, see scale), is least, then on it the tightest devices. This is the best-fit baseline of
// the FGD paper (Weng et al., ATC '23), so a trace replay compares with its figures.
// BestFit{} searches the State's index on every call; Indexed gives one that keeps a
// ranking per demand as well (fitIndex), for a caller that places many alike demands.
type BestFit struct{ idx *fitIndex }

func (BestFit) Name() string { return "best-fit" }

func (p BestFit) Place(s *State, d *Demand) (Choice, bool) { return s.fit(p.idx, d, true) }

// Prepare ranks the nodes for each of ds ahead of time when p keeps rankings.
func (p BestFit) Prepare(s *State, ds []Demand) { p.idx.prepareOn(s, ds) }

// Spread balances: the node with the most leftover share, then its least loaded devices.
type Spread struct{ idx *fitIndex }

func (Spread) Name() string { return "spread" }

func (p Spread) Place(s *State, d *Demand) (Choice, bool) { return s.fit(p.idx, d, false) }

// Prepare ranks the nodes for each of ds ahead of time when p keeps rankings.
func (p Spread) Prepare(s *State, ds []Demand) { p.idx.prepareOn(s, ds) }

// Indexed returns best fit or spread keeping a ranking of the nodes per demand asked
// lately (fitIndex), so that a call costs log n per node changed since the last call for
// that demand, however the nodes are filled. It makes the same choices as the search.
// Any other policy is returned as it is. Like every policy that keeps state, the result
// is for one State at a time and not for concurrent use.
func Indexed(p Policy) Policy {
	switch p.(type) {
	case BestFit:
		return BestFit{idx: newFitIndex(true)}
	case Spread:
		return Spread{idx: newFitIndex(false)}
	}
	return p
}

// fit places d by its ranking in x when there is one, else by the search.
func (s *State) fit(x *fitIndex, d *Demand, tight bool) (Choice, bool) {
	if x == nil {
		return s.scored(d, tight)
	}
	return x.place(s, d)
}

// scoreTie is how close two leftover shares must be to count as equal, so that float
// rounding never decides between nodes; equal shares go to the lower node index.
const scoreTie = 1e-9

// search is one branch-and-bound walk of the index for the best-scored node.
type search struct {
	s     *State
	d     *Demand
	tight bool
	found bool
	node  int
	score float64
	best  Choice
	buf   [16]int // scratch for each leaf
	keep  [16]int // holds best.Devices, so the next leaf cannot overwrite them
}

// scored returns the node with the least (tight) or most (!tight) leftover share. The
// group whose root bound is best is searched first, so the others mostly prune at once.
func (s *State) scored(d *Demand, tight bool) (Choice, bool) {
	x := s.index()
	w := search{s: s, d: d, tight: tight}
	first, skip := -1, make([]bool, len(x.groups))
	for i, g := range x.groups {
		skip[i] = !s.mayServe(g, d)
		if !skip[i] && g.sum[1].mayFit(d) && (first < 0 || w.better(g.sum[1].bound(d, tight), x.groups[first].sum[1].bound(d, tight))) {
			first = i
		}
	}
	if first < 0 {
		return Choice{}, false
	}
	w.visit(x.groups[first], 1, 0)
	for i, g := range x.groups {
		if i != first && !skip[i] {
			w.visit(g, 1, 0)
		}
	}
	if !w.found {
		return Choice{}, false
	}
	w.best.Devices = append([]int(nil), w.best.Devices...)
	return w.best, true
}

// better reports whether score a beats b by more than scoreTie in the policy's direction.
func (w *search) better(a, b float64) bool {
	if w.tight {
		return a < b-scoreTie
	}
	return a > b+scoreTie
}

// visit searches the subtree t of g whose first leaf is lo.
func (w *search) visit(g *group, t, lo int) {
	sm := &g.sum[t]
	if lo >= len(g.nodes) || !sm.mayFit(w.d) {
		return
	}
	if w.found {
		b, first := sm.bound(w.d, w.tight), g.nodes[lo]
		// Past the best node only a clearly better score wins; before it, a tie does.
		if first > w.node && !w.better(b, w.score) || first < w.node && w.better(w.score, b) {
			return
		}
	}
	if t >= g.size {
		w.leaf(g.nodes[t-g.size])
		return
	}
	width := g.width(t)
	l, r := 2*t, 2*t+1
	if w.better(g.sum[r].bound(w.d, w.tight), g.sum[l].bound(w.d, w.tight)) {
		w.visit(g, r, lo+width)
		w.visit(g, l, lo)
		return
	}
	w.visit(g, l, lo)
	w.visit(g, r, lo+width)
}

func (w *search) leaf(n int) {
	c, ok := w.s.pickDevices(n, w.d, w.tight, w.buf[:0])
	if !ok {
		return
	}
	sc := w.s.Leftover(&c, w.d)
	if !w.found || w.better(sc, w.score) || n < w.node && !w.better(w.score, sc) {
		c.Devices = append(w.keep[:0], c.Devices...)
		w.found, w.node, w.score, w.best = true, n, sc, c
	}
}

// Leftover is what node c.Node has left after placing d as c: half its free CPU plus half
// its free GPU units, each as a share of the cluster's largest node's (see scale).
func (s *State) Leftover(c *Choice, d *Demand) float64 {
	nd := &s.Nodes[c.Node]
	var free int64
	for i := range nd.Devices {
		free += nd.Devices[i].Free()
	}
	for _, i := range c.Devices {
		if c.Kind == Shard {
			free -= d.Units
		} else {
			free -= nd.Devices[i].Free()
		}
	}
	return s.index().scale.leftover(nd.CPU-nd.UsedCPU-d.CPU, free)
}

// pickDevices chooses d's devices on node n: for the first allowed kind (Shard, MIG,
// Whole) that has enough, the tightest (least free) or the loosest, lower index first
// among equals. devs is scratch space the result uses.
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
		// Insertion sort: a node has a handful of devices, and sort.Slice would allocate.
		for i := 1; i < len(devs); i++ {
			for j := i; j > 0 && looser(nd, devs[j-1], devs[j], tight); j-- {
				devs[j-1], devs[j] = devs[j], devs[j-1]
			}
		}
		return Choice{Node: n, Kind: k, Devices: devs[:d.GPUs]}, true
	}
	return Choice{}, false
}

// looser reports whether device a should come after device b.
func looser(nd *Node, a, b int, tight bool) bool {
	fa, fb := nd.Devices[a].Free(), nd.Devices[b].Free()
	if tight {
		return fa > fb
	}
	return fa < fb
}
