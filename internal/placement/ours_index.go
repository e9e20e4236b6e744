package placement

import (
	"strconv"
	"strings"
)

// candidates is Ours's index: for each demand it was asked lately, a heap of the nodes
// that admit it, ordered as Place ranks them (score, then the tie-break of Ours.before,
// then node number, as a scan keeps the first of equals). A call then reads the top of
// one heap instead of scoring every node. The index follows the state through its change
// log: a node Commit or Release changed, or one the use order numbered, gets its view
// taken again and its version bumped, and goes on a list of changes; a heap, when next
// read, scores again the nodes listed since it was last read and pushes them anew. Older
// entries of a node go stale (their version is not the node's) and are dropped when
// they reach the top or when stale entries outnumber live ones. A heap that fell behind
// further than the list keeps is built again.
//
// A node in use that the use order has not numbered yet has no place in the ranking
// until a scan numbers it (a scan numbers nodes as it comes across them). While there is
// any, which happens only when someone other than Ours put it in use, Place scans.
type candidates struct {
	cur        logCursor
	nodes      int      // len(s.Nodes) the index was built for
	ver        []uint32 // by node: bumped on every change
	dirty      []bool   // by node: changed since the last catch-up
	changed    []int32  // the nodes with dirty set
	unnumbered []bool   // by node: in use, without a use number
	waiting    int      // nodes with unnumbered set
	events     []int32  // nodes changed, in order, for the heaps to read
	evStart    int      // position of events[0] since the index began
	heaps      map[string]*candHeap
	tick       uint64 // calls so far, for dropping the heap used least lately
}

// maxHeaps bounds the demands indexed at once, each a heap of every node that admits it.
// A demand beyond them is indexed anew (one pass) when it comes.
const maxHeaps = 64

// dropLeastUsed makes room for one more heap: once heaps holds maxHeaps, it drops the
// one whose last use (used) is oldest.
func dropLeastUsed[H any](heaps map[string]H, used func(H) uint64) {
	if len(heaps) < maxHeaps {
		return
	}
	old, oldest := "", uint64(0)
	for key, h := range heaps {
		if u := used(h); old == "" || u < oldest {
			old, oldest = key, u
		}
	}
	delete(heaps, old)
}

// candHeap is the ranking of the nodes that admit one demand.
type candHeap struct {
	d     Demand
	did   int32
	share bool
	items []cand
	live  int      // nodes with a current entry
	in    []bool   // by node: has a current entry
	seen  []uint32 // by node: the version its entry, or its absence, was worked out for
	pos   int      // events read up to
	used  uint64   // tick of the last call that read it
}

// cand is one node's place in a ranking, as of version ver of the node.
type cand struct {
	score  float64
	idle   int64  // idle milli-GPU, for a share; 0 otherwise
	strand int64  // Ours.strand's key
	ord    uint64 // use number when numbered, else name rank
	n      int32
	ver    uint32
	fresh  bool // never numbered: ranks after every numbered node
}

// better is Place's ranking: higher score, then Ours.before, then the lower node.
func (a *cand) better(b *cand) bool {
	switch {
	case a.score != b.score:
		return a.score > b.score
	case a.strand != b.strand:
		return a.strand < b.strand
	case a.fresh != b.fresh:
		return !a.fresh
	case a.idle != b.idle:
		return a.idle < b.idle
	case a.ord != b.ord:
		return a.ord < b.ord
	}
	return a.n < b.n
}

// best returns the node Place takes for d, -1 for none, and ok false when the index
// cannot say and the caller must scan.
func (x *candidates) best(o *Ours, s *State, d *Demand) (int, bool) {
	x.catchUp(o, s)
	if x.waiting > 0 {
		return -1, false
	}
	h := x.heapFor(o, s, d)
	for len(h.items) > 0 {
		if top := &h.items[0]; top.ver == x.ver[top.n] {
			return int(top.n), true
		}
		h.pop()
	}
	return -1, true
}

// prepare builds the heap for d.
func (x *candidates) prepare(o *Ours, s *State, d *Demand) {
	x.catchUp(o, s)
	x.heapFor(o, s, d)
}

// catchUp brings views, versions and numbering up to date with s.
func (x *candidates) catchUp(o *Ours, s *State) {
	x.tick++
	changed, ok := s.changedSince(&x.cur)
	if !ok || x.nodes != len(s.Nodes) {
		x.restart(o, s)
		return
	}
	for _, n := range changed {
		x.mark(int(n))
	}
	for _, n := range o.order.numbered {
		x.mark(n)
	}
	o.order.numbered = o.order.numbered[:0]
	for _, n := range x.changed {
		x.dirty[n] = false
		o.cache.take(s, int(n))
		x.ver[n]++
		x.setUnnumbered(o, s, int(n))
		x.events = append(x.events, n)
	}
	x.changed = x.changed[:0]
	if keep := max(len(s.Nodes), 1024); len(x.events) > 2*keep {
		drop := len(x.events) - keep
		x.events = append(x.events[:0], x.events[drop:]...)
		x.evStart += drop
	}
}

func (x *candidates) mark(n int) {
	if !x.dirty[n] {
		x.dirty[n] = true
		x.changed = append(x.changed, int32(n))
	}
}

// restart starts over from s: views, numbering, versions; every heap is built again
// when next read.
func (x *candidates) restart(o *Ours, s *State) {
	o.cache.rebuild(s)
	o.order.numbered = o.order.numbered[:0]
	x.nodes = len(s.Nodes)
	x.ver = make([]uint32, len(s.Nodes))
	x.dirty = make([]bool, len(s.Nodes))
	x.changed = x.changed[:0]
	x.unnumbered = make([]bool, len(s.Nodes))
	x.waiting = 0
	for n := range s.Nodes {
		x.setUnnumbered(o, s, n)
	}
	x.evStart += len(x.events) + 1 // past every heap's position
	x.events = x.events[:0]
}

func (x *candidates) setUnnumbered(o *Ours, s *State, n int) {
	u := s.Nodes[n].UsedCPU > 0 && o.order.first[n] == 0
	if u != x.unnumbered[n] {
		x.unnumbered[n] = u
		if u {
			x.waiting++
		} else {
			x.waiting--
		}
	}
}

// heapFor returns d's heap, building it (and dropping the least used one past maxHeaps).
func (x *candidates) heapFor(o *Ours, s *State, d *Demand) *candHeap {
	k := candKey(d)
	h := x.heaps[k]
	if h == nil {
		if x.heaps == nil {
			x.heaps = map[string]*candHeap{}
		}
		dropLeastUsed(x.heaps, func(g *candHeap) uint64 { return g.used })
		h = &candHeap{d: cloneDemand(d), did: o.cache.demandID(d), share: d.kinds()&Shard != 0 && d.GPUs == 1, pos: -1}
		x.heaps[k] = h
	}
	h.used = x.tick
	h.sync(o, s, x)
	return h
}

// candKey is everything about d that decides which nodes admit it and how they score.
func candKey(d *Demand) string {
	var b strings.Builder
	for _, v := range []int64{d.CPU, d.Mem, int64(d.GPUs), d.Units, int64(d.kinds())} {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(' ')
	}
	b.WriteString(strings.Join(d.Models, "|"))
	b.WriteByte(' ')
	b.WriteString(strings.Join(d.Pools, "|"))
	return b.String()
}

func cloneDemand(d *Demand) Demand {
	c := *d
	c.Models = append([]string(nil), d.Models...)
	c.Pools = append([]string(nil), d.Pools...)
	return c
}

// sync scores again the nodes changed since the heap was last read, or builds it afresh
// when the list no longer reaches back that far.
func (h *candHeap) sync(o *Ours, s *State, x *candidates) {
	if h.pos < x.evStart {
		h.build(o, s, x)
		return
	}
	for _, n := range x.events[h.pos-x.evStart:] {
		if h.seen[n] == x.ver[n] {
			continue // listed twice
		}
		if h.in[n] {
			h.in[n] = false
			h.live--
		}
		h.add(o, s, x, int(n))
	}
	h.pos = x.evStart + len(x.events)
	if len(h.items) > 2*h.live+64 {
		h.compact(x)
	}
}

// build ranks every node of s afresh.
func (h *candHeap) build(o *Ours, s *State, x *candidates) {
	h.items, h.live = h.items[:0], 0
	h.in, h.seen = make([]bool, len(s.Nodes)), make([]uint32, len(s.Nodes))
	for n := range s.Nodes {
		h.seen[n] = x.ver[n]
		if c, ok := h.entry(o, s, x, n); ok {
			h.items = append(h.items, c)
			h.in[n] = true
			h.live++
		}
	}
	h.pos = x.evStart + len(x.events)
	h.heapify()
}

// add pushes node n's current entry, if it admits the demand.
func (h *candHeap) add(o *Ours, s *State, x *candidates, n int) {
	h.seen[n] = x.ver[n]
	c, ok := h.entry(o, s, x, n)
	if !ok {
		return
	}
	h.in[n] = true
	h.live++
	h.items = append(h.items, c)
	h.up(len(h.items) - 1)
}

// entry is node n's place in the ranking, as Place's scan would work it out.
func (h *candHeap) entry(o *Ours, s *State, x *candidates, n int) (cand, bool) {
	if !s.NodeAdmits(n, &h.d) {
		return cand{}, false
	}
	t := o.cache.trial(o.cache.nodeView[n], h.did, &h.d)
	if !t.ok {
		return cand{}, false
	}
	c := cand{score: t.score, n: int32(n), ver: x.ver[n], ord: o.rank[n], fresh: true}
	if first := o.order.first[n]; first > 0 {
		c.ord, c.fresh = uint64(first), false
	}
	if h.share {
		c.idle = idleMilli(&s.Nodes[n])
	}
	c.strand = o.strand.key(&s.Nodes[n], &h.d, o.cache.toMilli)
	return c, true
}

// compact drops stale entries.
func (h *candHeap) compact(x *candidates) {
	kept := h.items[:0]
	for _, c := range h.items {
		if c.ver == x.ver[c.n] {
			kept = append(kept, c)
		}
	}
	h.items = kept
	h.heapify()
}

func (h *candHeap) heapify() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candHeap) pop() {
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
}

func (h *candHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].better(&h.items[p]) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *candHeap) down(i int) {
	for {
		best, l, r := i, 2*i+1, 2*i+2
		if l < len(h.items) && h.items[l].better(&h.items[best]) {
			best = l
		}
		if r < len(h.items) && h.items[r].better(&h.items[best]) {
			best = r
		}
		if best == i {
			return
		}
		h.items[i], h.items[best] = h.items[best], h.items[i]
		i = best
	}
}
