package admit

import "sort"

// Slurm gives each component of a heterogeneous job nodes of its own, so components that
// each pick the form with the most room could all need the same few nodes and pend
// forever. The client decides the components one after the other in one process: it
// passes the hosts of those decided before (Job.HetSiblings), and a form is chosen only
// when every component can still have a node of its own.

// Hosts lists, for each node d (the decision for j) takes, the nodes it may be: the
// usable nodes of its partitions that hold its form, or its required nodes. The client
// passes them on as HetSiblings of the next component.
func (a *Admitter) Hosts(j Job, d Decision) [][]string {
	if !d.Changed {
		return nil
	}
	sh, err := shapeOf(&j)
	if err != nil {
		return nil
	}
	q := ask{mib: d.MiB, gpus: d.GPUs, perJob: d.PerJob}
	o := option{kind: d.Kind, name: d.Model, mib: d.Units}
	h := a.hosts(&q, &sh, a.resolve(d.Serving, nil), &o)
	out := make([][]string, sh.nodes)
	for i := range out {
		out[i] = h
	}
	return out
}

// hosts is the nodes of ps that one node of the job may be: its required nodes, or the
// usable nodes holding o.
func (a *Admitter) hosts(q *ask, sh *shape, ps []*partition, o *option) []string {
	if len(sh.req) > 0 {
		return sh.req
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		for _, m := range p.members {
			if !sh.usable(m.g.features) {
				continue
			}
			if s, _ := a.slots(q, m.g.cfg, o, nil); s == 0 {
				continue
			}
			for _, n := range m.g.nodes {
				if p.nodes[n] && !sh.exc[n] && !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// distinct says whether each of sets can be given a node of its own (a system of
// distinct representatives), by augmenting paths; the sets are a job's few components.
func distinct(sets [][]string) bool {
	owner := map[string]int{}
	var try func(i int, seen map[string]bool) bool
	try = func(i int, seen map[string]bool) bool {
		for _, n := range sets[i] {
			if seen[n] {
				continue
			}
			seen[n] = true
			if j, taken := owner[n]; !taken || try(j, seen) {
				owner[n] = i
				return true
			}
		}
		return false
	}
	for i := range sets {
		if !try(i, map[string]bool{}) {
			return false
		}
	}
	return true
}

// hetFits says whether a component of sh whose own node may be any of own still leaves
// every sibling a node of its own.
func hetFits(sh *shape, own []string) bool {
	if len(sh.siblings) == 0 {
		return true
	}
	sets := append([][]string(nil), sh.siblings...)
	for range sh.nodes {
		sets = append(sets, own)
	}
	return distinct(sets)
}
