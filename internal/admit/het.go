package admit

import (
	"slices"
	"sort"
)

// Slurm gives each component of a heterogeneous job nodes of its own, so components that
// each pick the form with the most room could all need the same few nodes and pend
// forever. The client decides the components one after the other in one process: it
// passes the hosts of those decided before (Job.HetSiblings), and a form is chosen only
// when the component still has nodes of its own whichever nodes those before it take.

// Hosts lists, for each node d (the decision for j) takes, the nodes it may be: each
// required node is one of them, and the rest may be any usable node of its partitions
// that holds its form. The client passes them on as HetSiblings of the next component.
// A job that may run in several partitions takes its nodes once per partition: Slurm's
// backfill plans it in each, and every plan of a heterogeneous component holds its nodes
// until the whole job can start. A component decided as one (Job.HetJob) has a single
// partition; one that was not (the first of a batch script's components, which the
// client cannot tell from a job of its own) may hold a node set in each.
func (a *Admitter) Hosts(j Job, d Decision) [][]string {
	if !d.Changed {
		return nil
	}
	sh, err := a.shapeOf(&j)
	if err != nil {
		return nil
	}
	q := ask{mib: d.MiB, gpus: d.GPUs, perJob: d.PerJob}
	o := option{kind: d.Kind, name: d.Model, mib: d.Units}
	var out [][]string
	for _, p := range a.resolve(d.Serving, nil) {
		out = append(out, a.hosts(&q, &sh, []*partition{p}, &o)...)
	}
	return out
}

// hosts is, for each node of sh, the nodes of ps it may be: a required node (--nodelist)
// fills one node of the job by itself, and each of the others may be any usable node
// holding o that is not required. -w n3 -N 2 is {n3} and {every other node holding o}.
func (a *Admitter) hosts(q *ask, sh *shape, ps []*partition, o *option) [][]string {
	out := make([][]string, 0, sh.nodes)
	for _, n := range sh.req {
		out = append(out, []string{n})
	}
	if int64(len(out)) >= sh.nodes {
		return out
	}
	seen := map[string]bool{}
	for _, n := range sh.req {
		seen[n] = true
	}
	var free []string
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
					free = append(free, n)
				}
			}
		}
	}
	sort.Strings(free)
	for int64(len(out)) < sh.nodes {
		out = append(out, free)
	}
	return out
}

// matched is how many of sets can each be given a node of its own at once (a maximum
// matching, by augmenting paths); the sets are a job's few node slots.
func matched(sets [][]string) int {
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
	k := 0
	for i := range sets {
		if try(i, map[string]bool{}) {
			k++
		}
	}
	return k
}

// hetFits says whether a component of sh, whose nodes may each be one of own (hosts),
// gets them whichever nodes the components before it take. Slurm's backfill starts a
// heterogeneous job's components one after the other, in order, each on nodes the ones
// before it did not take, and picks each component's nodes without looking at the ones
// after it: a component {n1,n2,n3} before one that only n1 can hold takes n1 (first fit)
// and the job never starts, though an assignment exists. So a required node any earlier
// component may take is lost, and of the rest the earlier components may take as many as
// their node slots can be matched into; what is left must still be enough.
func hetFits(sh *shape, own [][]string) bool {
	if len(sh.siblings) == 0 {
		return true
	}
	var any []string
	for _, s := range own {
		if len(s) == 1 && slices.Contains(sh.req, s[0]) {
			for _, sib := range sh.siblings {
				if slices.Contains(sib, s[0]) {
					return false
				}
			}
			continue
		}
		any = s // the slots beyond the required nodes all share one set
	}
	rest := sh.nodes - int64(len(sh.req))
	if rest <= 0 {
		return true
	}
	return int64(len(any)-matched(within(sh.siblings, any))) >= rest
}

// within is each of sets cut down to the nodes in own.
func within(sets [][]string, own []string) [][]string {
	in := make(map[string]bool, len(own))
	for _, n := range own {
		in[n] = true
	}
	out := make([][]string, len(sets))
	for i, s := range sets {
		for _, n := range s {
			if in[n] {
				out[i] = append(out[i], n)
			}
		}
	}
	return out
}
