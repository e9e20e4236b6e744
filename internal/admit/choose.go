package admit

import (
	"strconv"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
)

// target is the native form chosen for a request and the partitions that can serve it.
type target struct {
	kind  placement.Kind
	gres  string
	units int64
	model string
	parts []string
}

// choose picks the first kind, in preference order, that some candidate partition can
// serve, and within it the smallest slice that holds the request: a MIG profile by its
// real memory, or the GPU type with the least memory that is enough, so bigger GPUs stay
// free for bigger requests. The job is narrowed to the partitions offering that slice,
// because one GRES string must hold on every partition Slurm may pick.
func (a *Admitter) choose(q *ask, cands []string) (target, error) {
	order := [...]placement.Kind{placement.Shard, placement.MIG, placement.Whole}
	if a.opt.PreferMIG {
		order = [...]placement.Kind{placement.MIG, placement.Shard, placement.Whole}
	}
	var buf [8]*partition
	ps := a.resolve(cands, buf[:0])
	for _, k := range order {
		if t, ok := a.serve(q, ps, k); ok {
			return t, nil
		}
	}
	return target{}, a.refusal(q, cands)
}

// resolve looks the candidate partitions up once; unknown ones have no GPU and drop out.
func (a *Admitter) resolve(cands []string, ps []*partition) []*partition {
	for _, name := range cands {
		if p := a.parts[name]; p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

func (a *Admitter) serve(q *ask, ps []*partition, k placement.Kind) (target, bool) {
	if k == placement.Shard {
		return a.serveShards(q, ps)
	}
	var best *slice
	for _, p := range ps {
		if s := fitting(p.list(k), q); s != nil && (best == nil || s.mib < best.mib || s.mib == best.mib && s.name < best.name) {
			best = s
		}
	}
	if best == nil {
		return target{}, false
	}
	t := target{kind: k, gres: "gpu:" + best.name + ":" + strconv.FormatInt(q.gpus, 10), units: q.mib, model: best.name}
	for _, p := range ps {
		if offers(p.list(k), best.name, q) {
			t.parts = append(t.parts, p.name)
		}
	}
	return t, true
}

// serveShards: Slurm takes one job's shards on a node from a single GPU, so shards serve
// only one GPU, and only a GPU whose whole shards hold the rounded-up request.
func (a *Admitter) serveShards(q *ask, ps []*partition) (target, bool) {
	if q.gpus != 1 || q.model != "" {
		return target{}, false
	}
	n := shard.For(q.mib, a.opt.ShardUnitMiB)
	t := target{kind: placement.Shard, units: n * a.opt.ShardUnitMiB}
	for _, p := range ps {
		if p.shardMiB >= t.units {
			t.parts = append(t.parts, p.name)
		}
	}
	if len(t.parts) == 0 {
		return target{}, false
	}
	t.gres = "shard:" + strconv.FormatInt(n, 10)
	return t, true
}

func (p *partition) list(k placement.Kind) []slice {
	if k == placement.MIG {
		return p.migs
	}
	return p.wholes
}

// enough says whether s can give q its GPUs: on one node for a per-node count, anywhere
// in the partition for a per-job count.
func enough(s *slice, q *ask) bool {
	have := s.perNode
	if q.perJob {
		have = s.total
	}
	return s.mib >= q.mib && int64(have) >= q.gpus && (q.model == "" || q.model == s.name)
}

func fitting(list []slice, q *ask) *slice {
	for i := range list {
		if enough(&list[i], q) {
			return &list[i]
		}
	}
	return nil
}

func offers(list []slice, name string, q *ask) bool {
	for i := range list {
		if list[i].name == name {
			return enough(&list[i], q)
		}
	}
	return false
}
