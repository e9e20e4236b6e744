package placement

import (
	"slices"
	"strconv"
	"strings"
)

// fragCache keeps each node's fragmentation view and memoises everything computed from
// views, so a policy that scores every node for every task pays for a node's
// fragmentation only when that node changed, and only once per distinct condition.
// It belongs to one policy value and is not safe for concurrent use.
type fragCache struct {
	shapes []Shape
	ids    map[string]int32 // view key -> view id
	views  []nodeView
	frags  []float64 // by view id

	log      *changeLog // the state's log when the views were taken: another means start over
	withMem  bool       // views hold memory left: some shape needs memory
	nodeView []int32    // by node: its current view id
	seenCPU  []int64    // by node: UsedCPU when its view was taken
	seenMem  []int64    // by node: UsedMem when its view was taken
	seenDev  []int64    // all devices' Used, node after node
	devAt    []int      // by node: offset of its devices in seenDev

	demands map[string]int32 // demand key -> demand id
	trials  map[[2]int32]trial

	score func(delta float64) float64 // how the owning policy ranks a decrease in milli-GPU
	// byIndex: among a node's GPUs that score alike, take the lowest-numbered device (as
	// the published FGD does) rather than the one with the least free share.
	byIndex bool
	// toMilli turns units into milli-GPU of the cluster's largest GPU, so that scores
	// mean the same whether units are milli-GPU (the trace) or MiB (production).
	toMilli float64
	// byNode[demand id][node] is the last trial of that demand on that node, valid while
	// the node is still in the view it was made in: most nodes do not change between
	// two demands, and scanning one slice is far cheaper than a lookup per node.
	byNode [][]nodeTrial
}

type nodeTrial struct {
	view int32 // view id + 1; 0 = none yet
	t    trial
}

// trial is the outcome of placing one demand on a node in one view.
type trial struct {
	delta float64 // fragmentation before minus after: positive is better
	score float64 // delta as the policy ranks it
	// For a shared-GPU demand, the GPU to take: the first device of the node like GPU
	// gpu of the view. Kept small, as there is one trial per view and demand seen.
	gpu int16
	ok  bool
	// ties has bit i set for every GPU i of the view that scores as well as gpu (the
	// first 32), for a policy that takes the lowest-numbered device among them.
	ties uint32
}

func newFragCache(shapes []Shape, score func(float64) float64) *fragCache {
	return &fragCache{shapes: shapes, score: score, withMem: usesMem(shapes), ids: map[string]int32{}, demands: map[string]int32{}, trials: map[[2]int32]trial{}}
}

func (c *fragCache) intern(v nodeView) int32 {
	k := v.key()
	if id, ok := c.ids[k]; ok {
		return id
	}
	id := int32(len(c.views))
	c.ids[k] = id
	c.views = append(c.views, v)
	c.frags = append(c.frags, fragOf(&v, c.shapes))
	return id
}

// sync starts over when s is not the cluster the views were taken of: another state, or
// one reindexed after its nodes were edited.
func (c *fragCache) sync(s *State) {
	if c.log != s.currentLog() || len(c.nodeView) != len(s.Nodes) {
		c.rebuild(s)
		return
	}
	for n := range s.Nodes {
		if c.devAt[n+1]-c.devAt[n] != len(s.Nodes[n].Devices) {
			c.rebuild(s)
			return
		}
	}
}

// refresh brings node n's view up to date. It is called only for the nodes a demand is
// scored on, so full nodes cost nothing.
func (c *fragCache) refresh(s *State, n int) {
	nd := &s.Nodes[n]
	changed := nd.UsedCPU != c.seenCPU[n] || (c.withMem && nd.UsedMem != c.seenMem[n])
	seen := c.seenDev[c.devAt[n]:c.devAt[n+1]]
	for i := range nd.Devices {
		changed = changed || nd.Devices[i].Used != seen[i]
	}
	if changed {
		c.take(s, n)
	}
}

func (c *fragCache) rebuild(s *State) {
	c.byNode, c.log = nil, s.currentLog()
	if m := milliPerUnit(s); m != c.toMilli {
		c.toMilli, c.trials = m, map[[2]int32]trial{} // memoised scores used the old scale
	}
	c.nodeView = make([]int32, len(s.Nodes))
	c.seenCPU = make([]int64, len(s.Nodes))
	c.seenMem = make([]int64, len(s.Nodes))
	c.devAt = make([]int, len(s.Nodes)+1)
	total := 0
	for n := range s.Nodes {
		c.devAt[n] = total
		total += len(s.Nodes[n].Devices)
	}
	c.devAt[len(s.Nodes)] = total
	c.seenDev = make([]int64, total)
	for n := range s.Nodes {
		c.take(s, n)
	}
}

func (c *fragCache) take(s *State, n int) {
	nd := &s.Nodes[n]
	c.seenCPU[n], c.seenMem[n] = nd.UsedCPU, nd.UsedMem
	for i := range nd.Devices {
		c.seenDev[c.devAt[n]+i] = nd.Devices[i].Used
	}
	c.nodeView[n] = c.intern(viewOf(nd, c.withMem))
}

// demandKey is what a trial depends on: memory only when views hold it.
func demandKey(d *Demand, withMem bool) string {
	mem := int64(0)
	if withMem {
		mem = d.Mem
	}
	var b strings.Builder
	for _, v := range []int64{d.CPU, mem, int64(d.GPUs), d.Units, int64(d.kinds())} {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(' ')
	}
	b.WriteString(strings.Join(d.Models, "|"))
	return b.String()
}

func (c *fragCache) demandID(d *Demand) int32 {
	k := demandKey(d, c.withMem)
	id, ok := c.demands[k]
	if !ok {
		id = int32(len(c.demands))
		c.demands[k] = id
	}
	return id
}

// trial places d on a node in view id, on paper.
func (c *fragCache) trial(id, did int32, d *Demand) trial {
	key := [2]int32{id, did}
	t, ok := c.trials[key]
	if !ok {
		t = c.try(id, d)
		t.score = c.rank(t.delta)
		c.trials[key] = t
	}
	return t
}

// try works out a trial. For a shared-GPU demand the GPUs of the node are ranked by the
// policy's score of the decrease, as the policy would rank nodes.
func (c *fragCache) try(id int32, d *Demand) trial {
	v := &c.views[id]
	before := c.frags[id]
	if v.cpu < d.CPU {
		return trial{}
	}
	after := func(change func(*nodeView)) float64 {
		w := v.clone()
		w.cpu -= d.CPU
		if c.withMem {
			w.mem -= d.Mem
		}
		change(&w)
		w.sort()
		return before - c.frags[c.intern(w)]
	}
	allowed := func(g gpuView) bool { return len(d.Models) == 0 || slices.Contains(d.Models, g.model) }
	switch {
	case d.GPUs == 0:
		return trial{ok: true, delta: after(func(*nodeView) {})}
	case d.kinds()&Shard != 0 && d.GPUs == 1:
		best := trial{}
		for i, g := range v.gpus {
			if !allowed(g) || g.free < d.Units || (i > 0 && v.gpus[i-1] == g) {
				continue
			}
			delta := after(func(w *nodeView) { w.gpus[i].free -= d.Units })
			switch {
			case !best.ok || c.rank(delta) > c.rank(best.delta):
				best = trial{ok: true, delta: delta, gpu: int16(i), ties: bit(i)}
			case c.rank(delta) == c.rank(best.delta):
				best.ties |= bit(i)
			}
		}
		return best
	case d.kinds()&Whole != 0:
		var take []int
		for i, g := range v.gpus {
			if allowed(g) && g.free == g.cap && g.cap >= d.Units && len(take) < d.GPUs {
				take = append(take, i)
			}
		}
		if len(take) < d.GPUs {
			return trial{}
		}
		return trial{ok: true, delta: after(func(w *nodeView) {
			for _, i := range take {
				w.gpus[i].free = 0
			}
		})}
	}
	return trial{}
}

// each calls fn for every node that admits d, with the outcome of placing d there. Nodes
// in the same view are worked out once per call.
func (c *fragCache) each(s *State, d *Demand, fn func(n int, t trial)) {
	c.sync(s)
	did := c.demandID(d)
	for int(did) >= len(c.byNode) {
		c.byNode = append(c.byNode, make([]nodeTrial, len(s.Nodes)))
	}
	last := c.byNode[did]
	for n := range s.Nodes {
		if !s.NodeAdmits(n, d) {
			continue
		}
		c.refresh(s, n)
		v := c.nodeView[n]
		if last[n].view != v+1 {
			last[n] = nodeTrial{v + 1, c.trial(v, did, d)}
		}
		if last[n].t.ok {
			fn(n, last[n].t)
		}
	}
}

// choice turns a trial on node n into the devices to take.
func (c *fragCache) choice(s *State, n int, d *Demand, t trial) (Choice, bool) {
	if d.GPUs == 0 {
		return Choice{Node: n}, true
	}
	if d.kinds()&Shard != 0 && d.GPUs == 1 {
		gpus := c.views[c.nodeView[n]].gpus
		like := func(dv *Device, j int) bool { return dv.Model == gpus[j].model && dv.Free() == gpus[j].free }
		for i := range s.Nodes[n].Devices {
			dv := &s.Nodes[n].Devices[i]
			if dv.Profile != "" || !s.DeviceFits(n, i, d, Shard) {
				continue
			}
			if like(dv, int(t.gpu)) {
				return Choice{Node: n, Kind: Shard, Devices: []int{i}}, true
			}
			for j := range gpus {
				if c.byIndex && t.ties&bit(j) != 0 && like(dv, j) {
					return Choice{Node: n, Kind: Shard, Devices: []int{i}}, true
				}
			}
		}
		return Choice{}, false
	}
	var devs []int
	for i := range s.Nodes[n].Devices {
		if len(devs) < d.GPUs && s.DeviceFits(n, i, d, Whole) {
			devs = append(devs, i)
		}
	}
	return Choice{Node: n, Kind: Whole, Devices: devs}, len(devs) == d.GPUs
}

// bit is GPU i's bit in trial.ties; GPUs past the 32nd have none.
func bit(i int) uint32 {
	if i >= 32 {
		return 0
	}
	return 1 << i
}

func (c *fragCache) rank(delta float64) float64 { return c.score(delta * c.toMilli) }

// milliPerUnit is 1000 over the largest device capacity of s: 1 when units are milli-GPU.
func milliPerUnit(s *State) float64 {
	var largest int64
	for n := range s.Nodes {
		for i := range s.Nodes[n].Devices {
			largest = max(largest, s.Nodes[n].Devices[i].Capacity)
		}
	}
	if largest == 0 {
		return 1
	}
	return 1000 / float64(largest)
}
