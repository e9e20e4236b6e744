package placement

import (
	"slices"
	"strconv"
	"strings"
)

// index groups nodes of one shape (same CPUs, host memory, pools and devices) and keeps a
// segment tree of node summaries per group. Within a group capacities are equal, so the
// bounds a search prunes with are tight; real clusters have a handful of shapes.
// Commit and Release keep it current; it is rebuilt whenever the node count changed.
type index struct {
	n       int // nodes indexed
	scale   scale
	groups  []*group
	groupOf []int32 // node -> its group
	leafOf  []int32 // node -> its leaf in the group's tree
}

// group is one shape's segment tree; leaves are its nodes in ascending node order.
type group struct {
	nodes []int
	size  int // leaves, a power of two
	sum   []summary
}

// index returns the current index, building it on first use.
func (s *State) index() *index {
	if s.idx == nil || s.idx.n != len(s.Nodes) {
		s.Reindex()
	}
	return s.idx
}

// Reindex rebuilds the index from scratch; call it after changing Nodes other than
// through Commit and Release.
func (s *State) Reindex() {
	x := &index{n: len(s.Nodes), scale: scaleOf(s.Nodes), groupOf: make([]int32, len(s.Nodes)), leafOf: make([]int32, len(s.Nodes))}
	byShape := map[string]int{}
	for n := range s.Nodes {
		key := shapeKey(&s.Nodes[n])
		g, ok := byShape[key]
		if !ok {
			g = len(x.groups)
			byShape[key] = g
			x.groups = append(x.groups, &group{})
		}
		x.groupOf[n], x.leafOf[n] = int32(g), int32(len(x.groups[g].nodes))
		x.groups[g].nodes = append(x.groups[g].nodes, n)
	}
	for _, g := range x.groups {
		g.size = 1
		for g.size < len(g.nodes) {
			g.size *= 2
		}
		g.sum = make([]summary, 2*g.size)
		for i := range g.sum {
			g.sum[i] = emptySummary()
		}
		for i, n := range g.nodes {
			g.sum[g.size+i] = summarize(&s.Nodes[n], x.scale)
		}
		for t := g.size - 1; t >= 1; t-- {
			g.sum[t] = joinSummaries(&g.sum[2*t], &g.sum[2*t+1])
		}
	}
	s.idx = x
	s.log = &changeLog{} // Nodes may have changed in ways no log entry says
}

// shapeKey names what a node has, not what is allocated on it.
func shapeKey(nd *Node) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(nd.CPU, 10) + "/" + strconv.FormatInt(nd.Mem, 10) + "/" + strings.Join(nd.Pools, ","))
	for _, dv := range nd.Devices {
		b.WriteString("|" + dv.Model + ":" + dv.Profile + ":" + strconv.FormatInt(dv.Capacity, 10) + ":" + strconv.FormatBool(dv.Shareable))
	}
	return b.String()
}

// touch refreshes node n's path to its group's root after its allocation changed, and
// logs the change.
func (s *State) touch(n int) {
	s.logChange(n)
	if s.idx == nil || s.idx.n != len(s.Nodes) {
		return // built lazily, from the then current state
	}
	g := s.idx.groups[s.idx.groupOf[n]]
	t := g.size + int(s.idx.leafOf[n])
	g.sum[t] = summarize(&s.Nodes[n], s.idx.scale)
	for t /= 2; t >= 1; t /= 2 {
		g.sum[t] = joinSummaries(&g.sum[2*t], &g.sum[2*t+1])
	}
}

// width is how many leaves each child of tree node t covers.
func (g *group) width(t int) int {
	depth := 0
	for ; t > 1; t >>= 1 {
		depth++
	}
	return g.size >> (depth + 1)
}

// mayServe is whether g's shape can ever take d: its pools, and for a GPU demand a device
// of an allowed model and kind with enough capacity. It skips groups no search could use.
func (s *State) mayServe(g *group, d *Demand) bool {
	nd := &s.Nodes[g.nodes[0]]
	if nd.CPU < d.CPU || nd.Mem < d.Mem || len(d.Pools) > 0 && !anyIn(nd.Pools, d.Pools) {
		return false
	}
	if d.GPUs == 0 {
		return true
	}
	k, have := d.kinds(), 0
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		if dv.Capacity < d.Units || len(d.Models) > 0 && !slices.Contains(d.Models, dv.Model) {
			continue
		}
		if dv.Profile != "" && k&MIG != 0 || dv.Profile == "" && (k&Whole != 0 || k&Shard != 0 && dv.Shareable) {
			have++
		}
	}
	return have >= d.GPUs
}

func (x *index) clone() *index {
	c := &index{n: x.n, scale: x.scale, groupOf: x.groupOf, leafOf: x.leafOf, groups: make([]*group, len(x.groups))}
	for i, g := range x.groups {
		// nodes, groupOf and leafOf depend only on shapes, which never change: share them.
		c.groups[i] = &group{nodes: g.nodes, size: g.size, sum: append([]summary(nil), g.sum...)}
	}
	return c
}
