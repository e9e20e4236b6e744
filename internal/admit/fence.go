package admit

import (
	"errors"
	"fmt"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/refusal"
)

// The fence policies (Options.Fence): whether a shard slice needs a memory fence on its
// GPU, a limit the job cannot lift (inventory.GPU.Fence). MIG instances are the
// hardware's fence and a whole GPU has no neighbour to hurt, so only shards are steered.
const (
	FenceOff     = "off"     // shards wherever they fit
	FencePrefer  = "prefer"  // shards in fenced partitions first, when those have room
	FenceRequire = "require" // shards only where every GPU they could land on is fenced
)

// Slurm picks the GPU of a job's shards inside a node, and the node inside a partition,
// so gpumem can keep a slice off an unfenced GPU only by the partitions it lets the job
// use: under require a partition serves shards only when no node the job may use there
// (not excluded, with its features) has an unfenced shared GPU big enough for the slice.
// A smaller unfenced GPU does not count, since Slurm cannot put the slice there. A
// required node (--nodelist) does not narrow it: Slurm may add nodes to those. Pinning
// (ShardTypes = per-gpu) places within the partitions admission chose, so it never
// reaches an unfenced GPU either; prefer steers by partition alone.

// fenceTwins are the same admitter under another fence policy, sharing its index: under
// prefer a strict one (require) asked first; under require a loose one (off), to say in
// a refusal what would run without the fence, and for Holds. A twin knows its root, for
// which usage views are indexed.
type fenceTwins struct{ strict, loose, root *Admitter }

// root is the admitter a twin was made from, or a itself.
func (a *Admitter) root() *Admitter {
	if a.twins.root != nil {
		return a.twins.root
	}
	return a
}

// initFence checks the policy and makes the twins; New calls it once everything else is
// set.
func (a *Admitter) initFence() error {
	switch a.opt.Fence {
	case "":
		a.opt.Fence = FenceOff
	case FenceOff, FencePrefer, FenceRequire:
	default:
		return fmt.Errorf("admit: fence policy %q; want %s, %s or %s", a.opt.Fence, FenceOff, FencePrefer, FenceRequire)
	}
	twin := func(f string) *Admitter {
		t := *a
		t.opt.Fence, t.twins = f, fenceTwins{root: a}
		return &t
	}
	switch a.opt.Fence {
	case FencePrefer:
		a.twins.strict = twin(FenceRequire)
	case FenceRequire:
		a.twins.loose = twin(FenceOff)
	}
	return nil
}

// open reports whether a node of config c may give o's shards from a GPU without a
// fence: a shared GPU whose fence is none that holds the slice.
func (c *config) open(o *option) bool {
	if o.kind != placement.Shard {
		return false
	}
	for i, s := range c.shards {
		if s >= o.mib && c.shardFence[i] == inventory.FenceNone {
			return true
		}
	}
	return false
}

// unfenced reports whether, under require, a usable node of config c keeps o out of its
// partition (see above).
func (a *Admitter) unfenced(c *config, o *option) bool {
	return a.opt.Fence == FenceRequire && c.open(o)
}

// preferFenced is reach under prefer for shards: the fenced partitions of ps alone when
// they serve o and have room for it (now, with a usage view); false otherwise, and the
// caller reaches over all of ps.
func (a *Admitter) preferFenced(q *ask, sh *shape, ps []*partition, o *option, use *Usage) (reach, bool) {
	if a.twins.strict == nil || o.kind != placement.Shard {
		return reach{}, false
	}
	r, ok := a.twins.strict.reach(q, sh, ps, o, use)
	return r, ok && r.room > 0
}

// unfencedTwin is the admitter that ignores the fence: Holds asks whether a job can
// run at all, not whether gpumem would give it that slice now.
func (a *Admitter) unfencedTwin() *Admitter {
	if a.twins.loose != nil {
		return a.twins.loose
	}
	return a
}

// fenceRefusal is, under require, the refusal of a request that only unfenced shards
// hold: it says so, and what the job would run as without the fence. nil when the
// request does not fit without the fence either (the ordinary refusal says why).
func (a *Admitter) fenceRefusal(q *ask, sh *shape, cands []string) error {
	if a.twins.loose == nil {
		return nil
	}
	var d Decision
	if err := a.twins.loose.choose(q, sh, cands, nil, &d); err != nil || d.Kind != placement.Shard {
		return nil
	}
	return errors.New(refusal.FenceRequired(q.words(sh), cands, d.GRES, d.Serving))
}

// fenceWords is, under prefer and require, the fence the decision's slice gets, for its
// log line: hardware for MIG, the GPU itself for whole GPUs, and for shards the weakest
// fence of the GPUs of the serving partitions that could take them (excluded nodes and
// features are not looked at here, so it may say less than the job gets). "" under off.
func (a *Admitter) fenceWords(o *option, parts []string) string {
	switch {
	case a.opt.Fence == FenceOff:
		return ""
	case o.kind == placement.MIG:
		return inventory.FenceHardware
	case o.kind == placement.Whole:
		return "whole GPU"
	}
	weakest := ""
	for _, p := range a.resolve(parts, nil) {
		for _, m := range p.members {
			c := m.g.cfg
			for i, s := range c.shards {
				if s >= o.mib && fenceRank(c.shardFence[i]) < fenceRank(weakest) {
					weakest = c.shardFence[i]
				}
			}
		}
	}
	return weakest
}

// fenceRank orders fences weakest first; "" (none seen yet) ranks above them all.
func fenceRank(f string) int {
	switch f {
	case inventory.FenceNone:
		return 0
	case inventory.FenceMPS:
		return 1
	case inventory.FenceDriver:
		return 2
	case inventory.FenceHardware:
		return 3
	}
	return 4
}
