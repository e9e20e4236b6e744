package mig

import (
	"fmt"
	"github.com/gpumem/gpumem/internal/units"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// GPU is one GPU a cluster plan may repartition: a GPU in MIG mode whose model the
// catalog knows, with its current layout.
type GPU struct {
	Node   string
	Index  int
	Model  string // catalog key or NVML product name
	Layout Layout
}

// LayoutPolicy is what the admin sets for planning MIG layouts.
type LayoutPolicy struct {
	// KeepWhole is the share (0-1) of MIG GPUs kept as one full-GPU instance, for jobs
	// that need a whole GPU's memory. GPUs outside MIG mode (whole and shard GPUs) are
	// never planned at all: changing MIG mode needs a GPU reset.
	KeepWhole float64
}

// Change is one GPU's move from its layout to the planned one.
type Change struct {
	Node     string
	Index    int
	Model    string // catalog key
	From, To Layout
}

// ClusterPlan is a plan for every MIG GPU given: the layout each should have, which of
// them change, and how much of the demand the old and new layouts serve.
type ClusterPlan struct {
	Desired         []GPU // every GPU planned, in node and index order, catalog keys as models
	Changes         []Change
	Before, After   float64 // weight served
	Total           float64 // weight asked
	BySize          map[int64][2]float64
	BeforeBySize    map[int64][2]float64
	Kept            int      // GPUs kept as one full instance
	TooBig          float64  // weight no MIG profile holds
	Notes           []string // what was left out and why
	KeepWholeShare  float64
	PlannedGPUCount int
	byKey           map[string]Model
}

// PlanCluster chooses layouts for gpus that serve the most of demand: per model, a share
// of GPUs stays one full instance (LayoutPolicy.KeepWhole, the ones already whole first); the
// rest take the requests in order of weight (ties: larger first), each as its smallest
// profile on the first GPU where it fits. Planned layouts go first to GPUs that already
// have them, so as few GPUs change as possible; a GPU no request needs keeps its layout,
// and nothing changes unless more demand is served. The result depends only on its
// inputs.
func PlanCluster(gpus []GPU, demand []Demand, pol LayoutPolicy) (ClusterPlan, error) {
	if pol.KeepWhole < 0 || pol.KeepWhole > 1 || pol.KeepWhole != pol.KeepWhole {
		return ClusterPlan{}, fmt.Errorf("mig: keep-whole share %v: want 0 to 1", pol.KeepWhole)
	}
	p := ClusterPlan{byKey: map[string]Model{}, KeepWholeShare: pol.KeepWhole}
	all := append([]GPU(nil), gpus...)
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].Node != all[b].Node {
			return all[a].Node < all[b].Node
		}
		return all[a].Index < all[b].Index
	})
	byModel := map[string][]int{}
	var keys []string
	for i, g := range all {
		m, err := Lookup(g.Model)
		if err != nil {
			return ClusterPlan{}, fmt.Errorf("mig: %s GPU %d: %w", g.Node, g.Index, err)
		}
		if err := m.Validate(g.Layout); err != nil {
			return ClusterPlan{}, fmt.Errorf("mig: %s GPU %d has a layout the catalog calls invalid: %w", g.Node, g.Index, err)
		}
		all[i].Model = m.Key
		p.byKey[m.Key] = m
		if _, ok := byModel[m.Key]; !ok {
			keys = append(keys, m.Key)
		}
		byModel[m.Key] = append(byModel[m.Key], i)
	}
	sort.Strings(keys)
	demand = Merge(demand)
	p.Before, p.Total, p.BeforeBySize = Served(demand, instancesOf(all, p.byKey))

	desired := append([]GPU(nil), all...)
	left := demand
	for _, key := range keys {
		m := p.byKey[key]
		idx := byModel[key]
		planned, kept, rest := planModel(m, all, idx, left, pol.KeepWhole)
		p.Kept += kept
		for _, i := range idx {
			desired[i].Layout = planned[i]
		}
		left = rest
	}
	for _, d := range demand {
		biggest := int64(0)
		for _, m := range p.byKey {
			biggest = max(biggest, m.Profiles[len(m.Profiles)-1].MiB)
		}
		if d.MiB > biggest {
			p.TooBig += d.Weight
		}
	}
	p.After, _, p.BySize = Served(demand, instancesOf(desired, p.byKey))
	if p.After <= p.Before {
		// Nothing served better: leave every GPU as it is.
		desired = append([]GPU(nil), all...)
		p.After, p.BySize = p.Before, p.BeforeBySize
		p.Notes = append(p.Notes, "no layout serves more of this demand than the current one: nothing changes")
	}
	p.Desired = desired
	p.PlannedGPUCount = len(all)
	for i := range all {
		if !SameLayout(all[i].Layout, desired[i].Layout) {
			p.Changes = append(p.Changes, Change{Node: all[i].Node, Index: all[i].Index, Model: all[i].Model, From: all[i].Layout, To: desired[i].Layout})
		}
	}
	if p.TooBig > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s of %s of the demand asks more than the largest MIG instance holds: it needs whole GPUs", weight(round2(p.TooBig)), weight(round2(p.Total))))
	}
	return p, nil
}

// planModel plans the GPUs idx (all of model m): the kept ones get one full instance,
// the others the demand m can hold. It returns the layout per GPU index into all, the
// number kept whole and the demand left for other models.
func planModel(m Model, all []GPU, idx []int, demand []Demand, keepShare float64) (map[int]Layout, int, []Demand) {
	full := m.Profiles[len(m.Profiles)-1]
	keep := int(math.Ceil(keepShare*float64(len(idx)) - 1e-9))
	out := map[int]Layout{}
	// Keep as whole the GPUs that already are, then the last ones.
	order := append([]int(nil), idx...)
	sort.SliceStable(order, func(a, b int) bool {
		return isWhole(all[order[a]].Layout, full) && !isWhole(all[order[b]].Layout, full)
	})
	whole := map[int]bool{}
	for _, i := range order[:keep] {
		whole[i] = true
	}
	var free []int
	for _, i := range idx {
		if whole[i] {
			out[i] = Layout{{Profile: full.Name, Start: 0}}
		} else {
			free = append(free, i)
		}
	}
	// Requests, most weight first, each as its smallest profile; whole-number counts,
	// since an instance serves one request at a time.
	type req struct {
		p Profile
		w float64
	}
	var reqs []req
	var rest []Demand
	for _, d := range demand {
		p, err := m.Smallest(d.MiB)
		if err != nil {
			rest = append(rest, d)
			continue
		}
		reqs = append(reqs, req{p, d.Weight})
	}
	sort.SliceStable(reqs, func(a, b int) bool {
		if reqs[a].w != reqs[b].w {
			return reqs[a].w > reqs[b].w
		}
		return reqs[a].p.MiB > reqs[b].p.MiB
	})
	layouts := make([]Layout, len(free))
	// Round-robin over sizes, one instance each turn, so the heaviest size cannot take
	// every slot while a lighter one gets nothing.
	left := make([]float64, len(reqs))
	for i, r := range reqs {
		left[i] = math.Ceil(r.w - 1e-9)
	}
	placedAny := map[int]bool{}
	for progress := true; progress; {
		progress = false
		for i, r := range reqs {
			if left[i] <= 0 {
				continue
			}
			for g := range layouts {
				if l, ok := m.add(layouts[g], r.p); ok {
					layouts[g], left[i], progress, placedAny[g] = l, left[i]-1, true, true
					break
				}
			}
		}
	}
	for g, i := range free {
		if placedAny[g] {
			out[i] = canonical(m, layouts[g])
		} else {
			out[i] = all[i].Layout
		}
	}
	for i, r := range reqs {
		if left[i] > 0 {
			rest = append(rest, Demand{MiB: r.p.MiB, Weight: left[i]})
		}
	}
	return keepUnchanged(all, free, out), keep, rest
}

// keepUnchanged reassigns planned layouts among the free GPUs so a GPU whose current
// layout is one of them keeps it: the same instances on other GPUs serve the same.
func keepUnchanged(all []GPU, free []int, out map[int]Layout) map[int]Layout {
	pool := make([]Layout, 0, len(free))
	for _, i := range free {
		pool = append(pool, out[i])
	}
	taken := make([]bool, len(pool))
	assigned := map[int]bool{}
	for _, i := range free {
		for k, l := range pool {
			if !taken[k] && SameLayout(l, all[i].Layout) {
				out[i], taken[k], assigned[i] = l, true, true
				break
			}
		}
	}
	k := 0
	for _, i := range free {
		if assigned[i] {
			continue
		}
		for taken[k] {
			k++
		}
		out[i], taken[k] = pool[k], true
	}
	return out
}

// canonical orders a layout by start slot, so equal layouts print alike.
func canonical(m Model, l Layout) Layout {
	out := append(Layout(nil), l...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out
}

func isWhole(l Layout, full Profile) bool { return len(l) == 1 && l[0].Profile == full.Name }

// SameLayout reports whether a and b hold the same instances at the same starts.
func SameLayout(a, b Layout) bool {
	key := func(l Layout) string {
		s := make([]string, len(l))
		for i, p := range l {
			s[i] = p.Profile + "@" + strconv.Itoa(p.Start)
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	return key(a) == key(b)
}

func instancesOf(gpus []GPU, models map[string]Model) []Instance {
	var out []Instance
	for _, g := range gpus {
		m := models[g.Model]
		for _, pl := range g.Layout {
			p, _ := m.Profile(pl.Profile) // validated
			out = append(out, Instance{Profile: p.Name, MiB: p.MiB})
		}
	}
	return out
}

func weight(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

func pct(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

// Explain says in words and numbers what the plan changes and what it gains, one line
// each: the changes per node (GPUs with the same change grouped), the demand served
// before and after, per requested size, and any notes.
func (p ClusterPlan) Explain() []string {
	var lines []string
	type group struct {
		node, from, to, model string
		idx                   []int
	}
	var groups []*group
	for _, c := range p.Changes {
		last := len(groups) - 1
		if last >= 0 && groups[last].node == c.Node && groups[last].from == c.From.String() && groups[last].to == c.To.String() {
			groups[last].idx = append(groups[last].idx, c.Index)
			continue
		}
		groups = append(groups, &group{c.Node, c.From.String(), c.To.String(), c.Model, []int{c.Index}})
	}
	for _, g := range groups {
		from := g.from
		if from == "" {
			from = "(no instances)"
		}
		lines = append(lines, fmt.Sprintf("%s gpu[%s] (%s): %s -> %s = %s", g.node, slurmgres.FormatIndex(g.idx), g.model, from, g.to, p.summary(g.model, g.to)))
	}
	changed := fmt.Sprintf("%d of %d MIG GPUs change", len(p.Changes), p.PlannedGPUCount)
	if p.Kept > 0 {
		changed += fmt.Sprintf("; %d kept as one full instance (keep-whole %.0f %%)", p.Kept, 100*p.KeepWholeShare)
	}
	lines = append(lines, fmt.Sprintf("serves %.1f %% of the demand (%s of %s), was %.1f %% (%s): %+.1f points; %s",
		pct(p.After, p.Total), weight(round2(p.After)), weight(round2(p.Total)), pct(p.Before, p.Total), weight(round2(p.Before)),
		pct(p.After, p.Total)-pct(p.Before, p.Total), changed))
	// Per profile a request needs on the first model (sizes no profile holds: per size).
	type bucket struct {
		name      string
		mib       int64
		now, want float64
		was       float64
	}
	var first Model
	for _, k := range sortedKeys(p.byKey) {
		first = p.byKey[k]
		break
	}
	buckets := map[string]*bucket{}
	for s, a := range p.BySize {
		name, mib := "more than any MIG instance", s
		if pr, err := first.Smallest(s); err == nil {
			name, mib = "≤ "+units.Exact(pr.MiB)+" ("+pr.Name+")", pr.MiB
		}
		b := buckets[name]
		if b == nil {
			b = &bucket{name: name, mib: mib}
			buckets[name] = b
		}
		b.now, b.want, b.was = b.now+a[0], b.want+a[1], b.was+p.BeforeBySize[s][0]
	}
	var bs []*bucket
	for _, b := range buckets {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(a, b int) bool { return bs[a].mib < bs[b].mib })
	for _, b := range bs {
		lines = append(lines, fmt.Sprintf("  requests %s: %s of %s served, was %s", b.name, weight(round2(b.now)), weight(round2(b.want)), weight(round2(b.was))))
	}
	for _, n := range p.Notes {
		lines = append(lines, "note: "+n)
	}
	return lines
}

// summary counts a layout's instances per profile with their real MiB: "2×3g.40gb (40192 MiB)".
func (p ClusterPlan) summary(model, layout string) string {
	l, _ := ParseLayout(layout)
	m := p.byKey[model]
	count := map[string]int{}
	var names []string
	for _, pl := range l {
		if count[pl.Profile] == 0 {
			names = append(names, pl.Profile)
		}
		count[pl.Profile]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		pr, _ := m.Profile(n)
		parts[i] = fmt.Sprintf("%d×%s (%d MiB)", count[n], n, pr.MiB)
	}
	if len(parts) == 0 {
		return "no instances"
	}
	return strings.Join(parts, " + ")
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func sortedKeys(m map[string]Model) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
