package admit

import (
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// option is one native form a request could take: shards, a MIG profile or a GPU type.
type option struct {
	kind placement.Kind
	name string // MIG profile or GPU type; "" for shards
	mib  int64  // what each holds: the request in whole shards, or the smallest device
}

// reach is how many jobs (array tasks) of the request an option runs at once: cap on an
// idle cluster, room with what the usage view says is taken.
type reach struct {
	cap, room int64
	parts     []string
}

// choose picks, among every native form that enough nodes satisfying the whole request
// can serve, the one that runs the most of it at once: room now where a usage view is
// given, capacity otherwise, both counted in jobs of this request (array tasks up to the
// throttle). A single job wants as many as can run, so a burst of alike jobs spreads
// over the kind with the most room instead of queueing behind one MIG instance. Kind
// preference (PreferMIG), then the smaller slice, break ties. The job is narrowed to the
// partitions that can serve the form chosen, because one GRES string must hold on every
// partition Slurm may pick. The form chosen is written into d (Kind, GRES, Units,
// Model, Serving, Live, Explain); an error is the refusal, and d is then left alone.
func (a *Admitter) choose(q *ask, sh *shape, cands []string, use *Usage, d *Decision) error {
	var buf [8]*partition
	ps := a.resolve(cands, buf[:0])
	var obuf [8]option
	opts := a.options(q, ps, obuf[:0])
	best, bestR := -1, reach{}
	var crowded []string // the nodes of forms that components before this one may take
	var renamed []string // the forms that would change the GRES name a job must keep
	for i := range opts {
		r, ok := a.reach(q, sh, ps, &opts[i], use)
		if !ok {
			continue
		}
		if sh.keep != "" && gresName(opts[i].kind) != sh.keep {
			renamed = append(renamed, a.gresOf(q, &opts[i]))
			continue
		}
		if !sh.het {
			if best < 0 || a.better(q, sh, &opts[i], &r, &opts[best], &bestR) {
				best, bestR = i, r
			}
			continue
		}
		// A component of a heterogeneous job gets one partition (see shape.het), the
		// best one among those where it still has nodes whatever the components before
		// it take; partitions rank as forms do, ties going to the user's order.
		for _, name := range r.parts {
			one := a.resolve([]string{name}, nil)
			r1, _ := a.reach(q, sh, one, &opts[i], use)
			if len(sh.siblings) > 0 {
				if h := a.hosts(q, sh, one, &opts[i]); !hetFits(sh, h) {
					for _, n := range h {
						crowded = append(crowded, n...)
					}
					continue
				}
			}
			if best < 0 || a.better(q, sh, &opts[i], &r1, &opts[best], &bestR) {
				best, bestR = i, r1
			}
		}
	}
	if best < 0 && crowded != nil {
		return a.hetRefusal(q, sh, crowded)
	}
	if best < 0 && renamed != nil {
		return a.keepRefusal(q, sh, renamed)
	}
	if best < 0 {
		return a.refusal(q, sh, cands)
	}
	o := &opts[best]
	d.Kind, d.GRES, d.Units, d.Model, d.Serving, d.Live = o.kind, a.gresOf(q, o), q.mib, o.name, bestR.parts, use != nil
	if o.kind == placement.Shard {
		d.Units, d.Model = o.mib, ""
	}
	d.Explain = explain(q, d, a.fenceWords(o, d.Serving))
	return nil
}

// gresOf is the native GRES form o writes for q.
func (a *Admitter) gresOf(q *ask, o *option) string {
	if o.kind == placement.Shard {
		return slurmgres.Of(slurmgres.Shard, "", o.mib/a.opt.ShardUnitMiB).String()
	}
	n := q.gpus
	if q.perTask > 0 {
		n = q.perTask
	}
	return slurmgres.Of(slurmgres.GPU, o.name, n).String()
}

// better ranks option o (reaching r) against the best so far.
func (a *Admitter) better(q *ask, sh *shape, o *option, r *reach, b *option, br *reach) bool {
	want := sh.want
	if want <= 0 {
		want = 1 << 62
	}
	if x, y := min(r.room, want), min(br.room, want); x != y {
		return x > y
	}
	if x, y := min(r.cap, want), min(br.cap, want); x != y {
		return x > y
	}
	if x, y := a.rank(o.kind), a.rank(b.kind); x != y {
		return x < y
	}
	if o.mib != b.mib {
		return o.mib < b.mib
	}
	return o.name < b.name
}

// rank is a kind's place in the preference order.
func (a *Admitter) rank(k placement.Kind) int {
	switch {
	case k == placement.Whole:
		return 2
	case (k == placement.MIG) == a.opt.PreferMIG:
		return 0
	}
	return 1
}

// resolve looks the candidate partitions up once; unknown ones have no GPU and drop out.
func (a *Admitter) resolve(cands []string, ps []*partition) []*partition {
	for _, name := range cands {
		if p := a.ix.parts[name]; p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// options lists every native form whose devices hold q somewhere in ps: shards of one
// GPU (Slurm takes one job's shards on a node from a single GPU), every MIG profile and
// every GPU type big enough, appended to out (the caller's buffer, so that admission
// allocates none for the usual handful).
func (a *Admitter) options(q *ask, ps []*partition, out []option) []option {
	if q.shardable() {
		n := shard.For(q.mib, a.opt.ShardUnitMiB)
		out = append(out, option{kind: placement.Shard, mib: n * a.opt.ShardUnitMiB})
	}
	for _, p := range ps {
		for _, m := range p.members {
			for _, u := range m.g.cfg.units {
				if u.mib < q.mib || q.model != "" && q.model != u.name {
					continue
				}
				seen := false
				for _, o := range out {
					seen = seen || o.kind == u.kind && o.name == u.name
				}
				if !seen {
					out = append(out, option{kind: u.kind, name: u.name, mib: u.mib})
				}
			}
		}
	}
	return out
}

// reach counts what o can run of q in each partition; false when no partition can serve
// it under the job's shape. A partition serves when every required node and enough
// usable nodes hold it, and no usable node holds a smaller one under the same name
// (Slurm may give the job any of them).
func (a *Admitter) reach(q *ask, sh *shape, ps []*partition, o *option, use *Usage) (reach, bool) {
	if r, ok := a.preferFenced(q, sh, ps, o, use); ok {
		return r, true
	}
	var r reach
	for _, p := range ps {
		cap, room, ok := a.reachIn(q, sh, p, o, use)
		if !ok {
			continue
		}
		r.parts = append(r.parts, p.name)
		r.cap, r.room = max(r.cap, cap), max(r.room, room)
	}
	return r, len(r.parts) > 0
}

// slots is how many of q one node of config c holds in option o: per node, jobs of q;
// for a per-job GPU count, GPUs. taken, when not nil, is the shards taken on the node's
// GPUs by NVML index. mib is the smallest device of the option on the node (0: none).
func (a *Admitter) slots(q *ask, c *config, o *option, taken map[int]int64) (n int64, mib int64) {
	if o.kind == placement.Shard {
		for i, s := range c.shards {
			free := s - taken[c.shardGPU[i]]*a.opt.ShardUnitMiB
			n += max(free, 0) / o.mib
			mib = max(mib, s)
		}
		return n, mib
	}
	u := c.find(o.kind, o.name)
	if u == nil {
		return 0, 0
	}
	have := int64(u.count)
	for _, g := range u.gpus {
		if taken[g] > 0 && u.kind == placement.Whole {
			have-- // a shared GPU with shards taken cannot be given whole
		}
	}
	if q.perJob {
		return have, u.mib
	}
	return have / q.gpus, u.mib
}

// reachIn is reach for one partition.
func (a *Admitter) reachIn(q *ask, sh *shape, p *partition, o *option, use *Usage) (cap, room int64, ok bool) {
	// Nodes out of the job's reach, per group: excluded, or lacking its features.
	var out map[*group]int
	for name := range sh.exc {
		if p.nodes[name] {
			if out == nil {
				out = map[*group]int{}
			}
			out[a.ix.nodes[name].g]++
		}
	}
	var nodes, total int64
	for _, m := range p.members {
		n := int64(m.n - out[m.g])
		if n <= 0 || !sh.usable(m.g.features) {
			continue
		}
		if a.unfenced(m.g.cfg, o) {
			return 0, 0, false // Slurm may put the slice on that node's unfenced GPU
		}
		s, mib := a.slots(q, m.g.cfg, o, nil)
		if o.kind != placement.Shard && mib > 0 && mib < q.mib {
			return 0, 0, false // Slurm may pick this smaller one for the same name
		}
		if s > 0 {
			nodes += n
			total += n * s
		}
	}
	for _, name := range sh.req {
		ref, known := a.ix.nodes[name]
		if !known || !p.nodes[name] || sh.exc[name] || !sh.usable(ref.g.features) {
			return 0, 0, false
		}
		if s, _ := a.slots(q, ref.g.cfg, o, nil); s == 0 {
			return 0, 0, false
		}
	}
	if nodes < sh.nodes || q.perJob && total < q.gpus {
		return 0, 0, false
	}
	cap = a.jobs(q, sh, total)
	room = cap
	if use != nil {
		room = a.jobs(q, sh, total-a.lost(q, sh, p, o, use))
		for _, name := range sh.req {
			s, _ := a.slots(q, a.ix.nodes[name].g.cfg, o, use.Shards[name])
			if s == 0 {
				room = 0
			}
		}
	}
	if len(sh.req) > 0 {
		for _, name := range sh.req {
			s, _ := a.slots(q, a.ix.nodes[name].g.cfg, o, nil)
			cap = min(cap, s)
		}
		room = min(room, cap)
	}
	return cap, room, true
}

// jobs turns the slots of a partition's usable nodes into jobs of q.
func (a *Admitter) jobs(q *ask, sh *shape, total int64) int64 {
	if q.perJob {
		return total / q.gpus
	}
	return total / sh.nodes
}
