package admit

import (
	"errors"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/request"
	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// shape is the rest of a job's request, read once: which nodes it must, may and may not
// use, and how many of its kind it wants running at once.
type shape struct {
	req      []string        // --nodelist: its nodes, in its order, then any it names the cluster lacks (one)
	exc      map[string]bool // --exclude: the cluster's nodes it names
	feat     *featureExpr    // --constraint; nil: none
	nodes    int64           // nodes the job spans (at least the required ones)
	want     int64           // tasks wanted at once; 0: a single job, as many as possible
	siblings [][]string      // hosts of each node of the heterogeneous components decided before
	// het marks a component of a heterogeneous job, which is given one partition. Slurm's
	// backfill plans a job once per partition it names, and each plan of a component
	// holds its nodes: a component naming two partitions could hold the only nodes a
	// later one may use, so that none can start at the time the others can, and the job,
	// which starts only whole, pends for ever on an idle cluster (seen on 24.11 with
	// -p train,inference : -p gpu,inference, both shard:4).
	het      bool
	features string // --constraint as written, for messages
	keep     string // the GRES name (shard, gpu) a changed job must keep; "": any
	held     string // the native GRES the job holds, for messages
}

// shapeOf reads j's shape; an error is a refusal naming the option at fault. The host
// lists are read against the cluster's nodes, never expanded (slurmconf.NodeSet): a
// required node the cluster lacks ends the list, and the refusal names it; an excluded
// one means nothing here.
func (a *Admitter) shapeOf(j *Job) (shape, error) {
	s := shape{nodes: max(int64(j.MinNodes), 1), features: j.Features, siblings: j.HetSiblings, het: j.HetJob || len(j.HetSiblings) > 0}
	if j.Keep != "" {
		s.keep, s.held = heldName(j.Keep), slurmgres.StripAll(j.Keep)
	}
	if j.ReqNodes != "" {
		h, err := slurmconf.ParseHostlist(j.ReqNodes)
		if err != nil {
			return s, errors.New(refusal.HostList("--nodelist", j.ReqNodes, err))
		}
		names, missing := a.ix.hosts.Required(h)
		if missing != "" {
			names = append(names, missing) // no partition has it: the refusal names it
		}
		s.req = names
		s.nodes = max(s.nodes, int64(len(s.req)))
	}
	if j.ExcNodes != "" {
		h, err := slurmconf.ParseHostlist(j.ExcNodes)
		if err != nil {
			return s, errors.New(refusal.HostList("--exclude", j.ExcNodes, err))
		}
		names := a.ix.hosts.Covered(h)
		s.exc = make(map[string]bool, len(names))
		for _, n := range names {
			s.exc[n] = true
		}
	}
	if j.Features != "" {
		s.feat = parseFeatures(j.Features)
	}
	if j.Array != "" {
		tasks, err := request.ArrayTasks(j.Array)
		if err != nil {
			return s, err
		}
		s.want = tasks
	}
	return s, nil
}

// usable says whether a node of group g may run the job as far as its features go.
func (s *shape) usable(features []string) bool {
	return s.feat == nil || s.feat.match(features)
}

// featureExpr is a --constraint: feature names joined by & (and) and | (or), with
// parentheses, square brackets (read as parentheses) and ! (not). A count (name*2) or
// anything else gpumem does not read makes it loose: a node may serve when it has any
// feature the expression names, a superset of the nodes Slurm will pick from.
type featureExpr struct {
	loose bool
	names []string // every name, for the loose reading
	root  *featureNode
}

type featureNode struct {
	op   byte // 0: a name, '&', '|', '!'
	name string
	kids []*featureNode
}

func parseFeatures(s string) *featureExpr {
	e := &featureExpr{}
	p := featureParser{s: s, e: e}
	root, ok := p.or()
	if !ok || p.i != len(s) {
		e.loose = true
		return e
	}
	e.root = root
	return e
}

func (e *featureExpr) match(have []string) bool {
	if e.loose {
		if len(e.names) == 0 {
			return true
		}
		for _, n := range e.names {
			if hasFeature(have, n) {
				return true
			}
		}
		return false
	}
	return e.root.eval(have)
}

func (n *featureNode) eval(have []string) bool {
	switch n.op {
	case '&':
		for _, k := range n.kids {
			if !k.eval(have) {
				return false
			}
		}
		return true
	case '|':
		for _, k := range n.kids {
			if k.eval(have) {
				return true
			}
		}
		return false
	case '!':
		return !n.kids[0].eval(have)
	}
	return hasFeature(have, n.name)
}

type featureParser struct {
	s string
	i int
	e *featureExpr
}

func (p *featureParser) or() (*featureNode, bool) {
	return p.list('|', p.and)
}

func (p *featureParser) and() (*featureNode, bool) {
	return p.list('&', p.factor)
}

func (p *featureParser) list(op byte, next func() (*featureNode, bool)) (*featureNode, bool) {
	first, ok := next()
	if !ok {
		return nil, false
	}
	n := &featureNode{op: op, kids: []*featureNode{first}}
	for p.i < len(p.s) && p.s[p.i] == op {
		p.i++
		k, ok := next()
		if !ok {
			return nil, false
		}
		n.kids = append(n.kids, k)
	}
	if len(n.kids) == 1 {
		return first, true
	}
	return n, true
}

func (p *featureParser) factor() (*featureNode, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; c {
	case '!':
		p.i++
		k, ok := p.factor()
		return &featureNode{op: '!', kids: []*featureNode{k}}, ok
	case '(', '[':
		closer := byte(')')
		if c == '[' {
			closer = ']'
		}
		p.i++
		k, ok := p.or()
		if !ok || p.i >= len(p.s) || p.s[p.i] != closer {
			return nil, false
		}
		p.i++
		return k, true
	}
	j := p.i
	for j < len(p.s) && !strings.ContainsRune("&|!()[]", rune(p.s[j])) {
		j++
	}
	name := p.s[p.i:j]
	if name == "" {
		return nil, false
	}
	p.i = j
	if strings.ContainsAny(name, "*,: ") {
		// A count or something gpumem does not read: keep the name for the loose reading.
		name, _, _ = strings.Cut(name, "*")
		p.e.names = append(p.e.names, name)
		return nil, false
	}
	p.e.names = append(p.e.names, name)
	return &featureNode{name: name}, true
}
