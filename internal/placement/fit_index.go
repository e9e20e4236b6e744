package placement

// fitIndex is best fit's and spread's index for a caller that places many demands on one
// State (job_submit's pinning): for each demand asked lately, a heap of the nodes that
// can take it, ranked by the leftover share after placing it there, as scored ranks
// them. A call reads the top of one heap; the nodes Commit and Release changed since the
// heap was last read (the State's change log) are scored again and pushed anew, and
// their older entries go stale (their version is not the node's) and are dropped when
// they reach the top or outnumber the live ones.
//
// The branch and bound (scored) needs no index, but its bound for N shards reads the
// nodes whose largest free space has N's bit length, and nodes with less than N free in
// that range cannot be pruned by score: best fit makes many of them (packed nodes with a
// small remainder, the lowest leftovers of all), and each costs a walk from the root
// down. With 10,000 nodes its search grew from 55 to 3,000 tree nodes over 8,000 pins
// since the last snapshot, 1 ms at the 99th percentile. The heap's cost does not depend
// on how the nodes are filled: one push per changed node, log n each.
//
// A demand not ranked yet, or whose heap fell further behind than the change log keeps
// (twice the node count), costs one pass over the nodes when next asked, as in Ours.
//
// The heap ranks by the exact leftover and then the lower node; scored counts leftovers
// within scoreTie as equal, so the two can differ only between nodes whose leftovers
// differ by less than that, which is float rounding.
type fitIndex struct {
	tight bool
	heaps map[string]*fitHeap
	tick  uint64 // calls so far, for dropping the heap used least lately
}

// fitHeap ranks the nodes that can take one demand on one State.
type fitHeap struct {
	d     Demand
	cur   logCursor // where the State's change log was read to
	nodes int       // len(s.Nodes) it was built for
	items []fitEntry
	ver   []uint32 // by node: bumped each time its entry is worked out again
	in    []bool   // by node: has a current entry
	live  int
	used  uint64
	buf   [16]int // scratch for pickDevices
}

type fitEntry struct {
	score float64
	n     int32
	ver   uint32
}

func newFitIndex(tight bool) *fitIndex { return &fitIndex{tight: tight, heaps: map[string]*fitHeap{}} }

// place is scored's choice for d, read from d's heap.
func (x *fitIndex) place(s *State, d *Demand) (Choice, bool) {
	h := x.heapFor(s, d)
	for len(h.items) > 0 {
		top := &h.items[0]
		if top.ver != h.ver[top.n] {
			h.pop(x.tight)
			continue
		}
		c, ok := s.pickDevices(int(top.n), d, x.tight, nil)
		return c, ok // ok: the entry is current, so the node takes d as when it was scored
	}
	return Choice{}, false
}

// prepareOn builds the heaps for ds ahead of the calls that will read them; a nil index
// has none to build.
func (x *fitIndex) prepareOn(s *State, ds []Demand) {
	if x == nil {
		return
	}
	for i := range ds {
		x.heapFor(s, &ds[i])
	}
}

// heapFor returns d's heap brought up to date with s, building it when it is new or
// cannot follow s's changes (dropping the heap used least lately past maxHeaps).
func (x *fitIndex) heapFor(s *State, d *Demand) *fitHeap {
	x.tick++
	s.index() // Leftover's scale; building it starts a new change log, so first
	k := candKey(d)
	h := x.heaps[k]
	if h == nil {
		dropLeastUsed(x.heaps, func(g *fitHeap) uint64 { return g.used })
		h = &fitHeap{d: cloneDemand(d), nodes: -1}
		x.heaps[k] = h
	}
	h.used = x.tick
	changed, ok := s.changedSince(&h.cur)
	if !ok || h.nodes != len(s.Nodes) {
		h.build(s, x.tight)
		return h
	}
	for _, n := range changed {
		h.rescore(s, int(n), x.tight)
	}
	if len(h.items) > 2*h.live+64 {
		h.compact(x.tight)
	}
	return h
}

// build scores every node afresh.
func (h *fitHeap) build(s *State, tight bool) {
	h.nodes = len(s.Nodes)
	h.items, h.live = h.items[:0], 0
	h.ver, h.in = make([]uint32, len(s.Nodes)), make([]bool, len(s.Nodes))
	for n := range s.Nodes {
		if e, ok := h.entry(s, n, tight); ok {
			h.items = append(h.items, e)
			h.in[n] = true
			h.live++
		}
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i, tight)
	}
}

// rescore makes node n's entries stale and pushes its current one, if it takes the
// demand.
func (h *fitHeap) rescore(s *State, n int, tight bool) {
	h.ver[n]++
	if h.in[n] {
		h.in[n] = false
		h.live--
	}
	if e, ok := h.entry(s, n, tight); ok {
		h.in[n] = true
		h.live++
		h.items = append(h.items, e)
		h.up(len(h.items)-1, tight)
	}
}

// entry is node n's leftover after taking the demand as scored would place it there.
func (h *fitHeap) entry(s *State, n int, tight bool) (fitEntry, bool) {
	c, ok := s.pickDevices(n, &h.d, tight, h.buf[:0])
	if !ok {
		return fitEntry{}, false
	}
	return fitEntry{score: s.Leftover(&c, &h.d), n: int32(n), ver: h.ver[n]}, true
}

// better is scored's ranking: the least (tight) or most leftover, then the lower node.
func (a *fitEntry) better(b *fitEntry, tight bool) bool {
	if a.score != b.score {
		return a.score < b.score == tight
	}
	return a.n < b.n
}

func (h *fitHeap) compact(tight bool) {
	kept := h.items[:0]
	for _, e := range h.items {
		if e.ver == h.ver[e.n] {
			kept = append(kept, e)
		}
	}
	h.items = kept
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i, tight)
	}
}

func (h *fitHeap) pop(tight bool) {
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0, tight)
	}
}

func (h *fitHeap) up(i int, tight bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].better(&h.items[p], tight) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *fitHeap) down(i int, tight bool) {
	for {
		best, l, r := i, 2*i+1, 2*i+2
		if l < len(h.items) && h.items[l].better(&h.items[best], tight) {
			best = l
		}
		if r < len(h.items) && h.items[r].better(&h.items[best], tight) {
			best = r
		}
		if best == i {
			return
		}
		h.items[i], h.items[best] = h.items[best], h.items[i]
		i = best
	}
}
