package admit

import (
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/units"
)

// refusal explains, in the user's own words, why no native form can serve the request:
// for each partition the job may use, the node or limit at fault and the most that fits
// under the same shape, and which other partitions would take it as it is.
func (a *Admitter) refusal(q *ask, sh *shape, cands []string) error {
	if err := a.fenceRefusal(q, sh, cands); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("gpumem: you asked for " + q.words(sh) + ", but ")
	if len(cands) == 0 {
		b.WriteString("gpumem knows no partition with GPUs")
	}
	for i, name := range cands {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(a.why(q, sh, name))
	}
	var elsewhere []string
	for _, name := range a.names {
		if !slices.Contains(cands, name) && a.fits(q, sh, name) {
			elsewhere = append(elsewhere, name)
		}
	}
	if len(elsewhere) > 0 {
		b.WriteString(". It fits in partition " + strings.Join(elsewhere, ", ") + " (--partition=" + elsewhere[0] + ")")
	}
	return errors.New(b.String())
}

// words is the request as the user wrote it, in option form.
func (q *ask) words(sh *shape) string {
	w := []string{"--gres=gpu:mem:" + q.size}
	count := strconv.FormatInt(q.gpus, 10)
	if q.model != "" {
		count = q.model + ":" + count
	}
	switch {
	case q.perTask > 0:
		count = strconv.FormatInt(q.perTask, 10)
		if q.model != "" {
			count = q.model + ":" + count
		}
		w = append(w, "--gpus-per-task="+count)
		if q.gpus > q.perTask {
			w = append(w, "for "+strconv.FormatInt(q.gpus/q.perTask, 10)+" tasks")
		}
	case q.perJob && (q.gpus > 1 || q.model != ""):
		w = append(w, "--gpus="+count)
	case q.gpus > 1 || q.model != "":
		w = append(w, "--gpus-per-node="+count)
	}
	if s := sh.words(); s != "" {
		w = append(w, s)
	}
	if only := strings.TrimSpace(strings.ReplaceAll(" "+q.only+" ", " --gpus-per-task ", " ")); only != "" {
		w = append(w, only)
	}
	return strings.Join(w, " ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// why is the reason partition name cannot serve q under sh.
func (a *Admitter) why(q *ask, sh *shape, name string) string {
	p := a.ix.parts[name]
	if p == nil {
		return "partition " + name + " has no GPU node gpumem knows"
	}
	for _, r := range sh.req {
		ref, known := a.ix.nodes[r]
		switch {
		case !known:
			return "node " + r + " has no GPU gpumem knows"
		case !p.nodes[r]:
			return "node " + r + " is not in partition " + name + a.partitionsOf(r)
		case sh.exc[r]:
			return "node " + r + " is both required (--nodelist) and excluded (--exclude)"
		case !sh.usable(ref.g.features):
			return "node " + r + " does not have --constraint=" + sh.features
		}
		if !a.holdsOn(q, ref.g.cfg) {
			return "on node " + r + " " + a.mostOn(q, ref.g.cfg)
		}
	}
	m, by := a.largestFit(q, sh, p)
	plain := q.shardable() && sh.nodes == 1 && len(sh.exc) == 0 && sh.feat == nil
	switch {
	case m > 0 && plain:
		s := "the largest GPU in partition " + name + " has " + units.GiBAndMiB(p.largest) + " (" + p.largestBy + "); up to gpu:mem:" + units.FormatSize(m) + " per GPU fits there"
		if by != p.largestBy {
			// The most that fits is not all of the largest GPU (a MIG instance of it, or
			// another GPU): name what holds it, or the two figures seem to disagree.
			s += " (on " + by + ")"
		}
		return s
	case m > 0:
		s := "in partition " + name + ", the most that fits " + q.countWords(sh) + " is gpu:mem:" + units.FormatSize(m) + " per GPU (" + by + ")"
		if k := a.nodesHolding(q, sh, p); sh.nodes > 1 && k > 0 && k < sh.nodes {
			s += "; only " + strconv.FormatInt(k, 10) + " of its nodes can hold gpu:mem:" + q.size
			if n := a.mostNodes(q, sh, p); n > 0 {
				s += " (--nodes=" + strconv.FormatInt(n, 10) + " runs it)"
			}
		}
		return s
	case sh.nodes > 1:
		s := "partition " + name + " has fewer than " + strconv.FormatInt(sh.nodes, 10) + " nodes the job may use with GPUs of one kind for it (" + strconv.FormatInt(a.nodesHolding(q, sh, p), 10) + " hold it)"
		if k := a.mostNodes(q, sh, p); k > 0 {
			s += "; it fits on " + strconv.FormatInt(k, 10) + " (--nodes=" + strconv.FormatInt(k, 10) + ")"
		}
		return s
	case q.gpus > 1 && q.perJob:
		return "partition " + name + " has no " + strconv.FormatInt(q.gpus, 10) + " GPUs of one type usable by the job"
	case q.gpus > 1:
		return "partition " + name + " has no " + strconv.FormatInt(q.gpus, 10) + " GPUs of one type on one node"
	case q.model != "":
		return "partition " + name + " has no usable GPU of type " + q.model
	}
	return "partition " + name + " has no GPU node the job may use"
}

// countWords says what the request's count and shape are, for "the most that fits ...".
func (q *ask) countWords(sh *shape) string {
	var w []string
	if q.gpus > 1 {
		per := " on one node"
		if q.perJob {
			per = ""
		}
		w = append(w, "for "+strconv.FormatInt(q.gpus, 10)+" GPUs"+per)
	}
	if q.model != "" {
		w = append(w, "on type "+q.model)
	}
	if sh.nodes > 1 {
		w = append(w, "on "+strconv.FormatInt(sh.nodes, 10)+" nodes")
	}
	if len(w) == 0 {
		return "on the nodes the job may use"
	}
	return strings.Join(w, " ")
}

// holdsOn says whether one node of config c can hold q by itself.
func (a *Admitter) holdsOn(q *ask, c *config) bool {
	for _, o := range a.nodeOptions(q, c) {
		if s, _ := a.slots(q, c, &o, nil); s > 0 {
			return true
		}
	}
	return false
}

func (a *Admitter) nodeOptions(q *ask, c *config) []option {
	var out []option
	if q.shardable() {
		n := shard.For(q.mib, a.opt.ShardUnitMiB)
		out = append(out, option{kind: placement.Shard, mib: n * a.opt.ShardUnitMiB})
	}
	for _, u := range c.units {
		if u.mib >= q.mib && (q.model == "" || q.model == u.name) {
			out = append(out, option{kind: u.kind, name: u.name, mib: u.mib})
		}
	}
	return out
}

// mostOn says what one node of config c has and the most it holds for q's count.
func (a *Admitter) mostOn(q *ask, c *config) string {
	var m int64
	by := c.largestBy
	probe := *q
	for _, size := range a.sizes(q, c) {
		probe.mib = size
		if a.holdsOn(&probe, c) {
			m = size
			break
		}
	}
	if m == 0 {
		return "there are no " + strconv.FormatInt(q.gpus, 10) + " GPUs" + modelWords(q.model) + " (the largest is " + by + ", " + units.GiBAndMiB(c.largest) + ")"
	}
	return "the GPUs are " + by + " with " + units.GiBAndMiB(c.largest) + "; up to gpu:mem:" + units.FormatSize(m) + " per GPU fits there"
}

func modelWords(m string) string {
	if m == "" {
		return ""
	}
	return " of type " + m
}

// sizes is every memory size a device of c offers q (shards or a MIG or GPU type),
// largest first.
func (a *Admitter) sizes(q *ask, c *config) []int64 {
	var out []int64
	if q.shardable() {
		out = append(out, c.shards...)
	}
	for _, u := range c.units {
		if q.model == "" || q.model == u.name {
			out = append(out, u.mib)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

// largestFit is the most memory per GPU that q's count and shape can get in p, with the
// device that gives it.
func (a *Admitter) largestFit(q *ask, sh *shape, p *partition) (int64, string) {
	var cand []int64
	by := map[int64]string{}
	for _, m := range p.members {
		for _, s := range a.sizes(q, m.g.cfg) {
			if _, seen := by[s]; !seen {
				cand = append(cand, s)
				by[s] = a.productOf(m.g.cfg, s)
			}
		}
	}
	sort.Slice(cand, func(i, j int) bool { return cand[i] > cand[j] })
	probe := *q
	ps := []*partition{p}
	for _, size := range cand {
		probe.mib = size
		for _, o := range a.options(&probe, ps) {
			if _, _, ok := a.reachIn(&probe, sh, p, &o, nil); ok {
				return size, by[size]
			}
		}
	}
	return 0, ""
}

// productOf names the device of c that offers size.
func (a *Admitter) productOf(c *config, size int64) string {
	for _, u := range c.units {
		if u.mib == size {
			if u.kind == placement.MIG {
				return "MIG " + u.name + " of " + u.product
			}
			return u.product
		}
	}
	return "shards of " + c.largestBy
}

// nodesHolding counts the usable nodes of p that can hold q by themselves.
func (a *Admitter) nodesHolding(q *ask, sh *shape, p *partition) int64 {
	var k int64
	for _, m := range p.members {
		if sh.usable(m.g.features) && a.holdsOn(q, m.g.cfg) {
			k += int64(m.n)
		}
	}
	for name := range sh.exc {
		if ref, ok := a.ix.nodes[name]; ok && p.nodes[name] && sh.usable(ref.g.features) && a.holdsOn(q, ref.g.cfg) {
			k--
		}
	}
	return k
}

func (a *Admitter) fits(q *ask, sh *shape, name string) bool {
	p := a.ix.parts[name]
	ps := []*partition{p}
	for _, o := range a.options(q, ps) {
		if _, _, ok := a.reachIn(q, sh, p, &o, nil); ok {
			return true
		}
	}
	return false
}

// hetRefusal: every form that holds the component is on nodes (hosts) the components
// before it may take first.
func (a *Admitter) hetRefusal(q *ask, sh *shape, hosts []string) error {
	sort.Strings(hosts)
	hosts = slices.Compact(hosts)
	list := strings.Join(hosts, ",")
	if len(hosts) > 8 {
		list = strings.Join(hosts[:8], ",") + ",... (" + strconv.Itoa(len(hosts)) + " nodes)"
	}
	return errors.New("gpumem: you asked for " + q.words(sh) + " in a heterogeneous job. Slurm starts its components in order, " +
		"each on nodes of its own chosen without regard to the components after it, and the components before this one may take " +
		"the nodes that can hold it (" + list + "), so the job might never start. Put this component first, keep the ones before it " +
		"off those nodes (--exclude) or to one partition each (-p), or ask for a size more nodes hold")
}

// partitionsOf says which partitions node is in, for a refusal that names another.
func (a *Admitter) partitionsOf(node string) string {
	var in []string
	for _, name := range a.names {
		if a.ix.parts[name].nodes[node] {
			in = append(in, name)
		}
	}
	if len(in) == 0 {
		return ""
	}
	return " (it is in " + strings.Join(in, ", ") + ")"
}

// mostNodes is the most nodes, fewer than the job asked for, on which q fits in p with
// the rest of its shape; 0 when none. More nodes than p has never fit: the search
// starts at p's size, whatever --nodes says.
func (a *Admitter) mostNodes(q *ask, sh *shape, p *partition) int64 {
	probe := *sh
	ps := []*partition{p}
	for k := min(sh.nodes-1, int64(len(p.nodes))); k >= max(int64(len(sh.req)), 1); k-- {
		probe.nodes = k
		for _, o := range a.options(q, ps) {
			if _, _, ok := a.reachIn(q, &probe, p, &o, nil); ok {
				return k
			}
		}
	}
	return 0
}
