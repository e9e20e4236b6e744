package why

import (
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// This file reads what Slurm's client commands print about a job's request and a
// node's GPUs into the package's terms; gpumemctl why runs the commands.

// AskOf reads a job's TRES per node (squeue %b: gres:shard:20, gres/gpu:3g.40gb:1,
// gres:gpu:l4:2, gres/gpu:2) as what it asks of each node's GPUs.
func AskOf(tresPerNode string, unitMiB int64) (kind string, perGPUMiB, gpus int64, typ string) {
	for _, e := range slurmgres.Split(tresPerNode) {
		it, err := slurmgres.Parse(e)
		if err != nil {
			continue
		}
		n := int64(1)
		if it.Counted {
			n = it.Count
		}
		switch it.Name {
		case slurmgres.Shard:
			// gpu:mem asks its size on one GPU: all its shards on one.
			return Shard, n * unitMiB, 1, it.Type
		case slurmgres.GPU:
			if _, ok := mig.ProfileMiB(it.Type); ok {
				return MIG, 0, n, it.Type
			}
			return Whole, 0, n, it.Type
		}
	}
	return "", 0, 0, ""
}

// NodeOf reads one node from `scontrol -o -d show node`'s fields: its configured
// GRES (Gres=), what is allocated of them (GresUsed=) and its AllocTRES=. Slurm 23.11
// and later give a shared GPU's shards per GPU (10/22,0/22); before, only which GPUs
// hold some (IDX:0-1) and the node's total in AllocTRES, kept as HiddenShards.
func NodeOf(name, state string, partitions []string, gres, gresUsed, allocTRES string) Node {
	n := Node{Name: name, State: state, Partitions: partitions, Usable: usable(state)}
	byModel := map[string][]int{} // model -> indices into n.GPUs, in order
	var migs []Instance
	migAt := map[string][]int{} // profile -> indices into migs
	for _, e := range slurmgres.Split(gres) {
		it, err := slurmgres.Parse(e)
		if err != nil || it.Name != slurmgres.GPU || !it.Counted || it.Count > slurmgres.MaxGPUs {
			continue
		}
		for range it.Count {
			if _, ok := mig.ProfileMiB(it.Type); ok {
				migAt[it.Type] = append(migAt[it.Type], len(migs))
				migs = append(migs, Instance{Profile: it.Type})
				continue
			}
			byModel[it.Type] = append(byModel[it.Type], len(n.GPUs))
			n.GPUs = append(n.GPUs, GPU{Index: len(n.GPUs), Model: it.Type})
		}
	}
	for _, e := range slurmgres.Split(gres) {
		it, err := slurmgres.Parse(e)
		if err != nil || it.Name != slurmgres.Shard || !it.Counted || len(byModel[it.Type]) == 0 {
			continue
		}
		gs := byModel[it.Type]
		for _, i := range gs {
			n.GPUs[i].Shards = it.Count / int64(len(gs))
		}
	}
	for _, e := range slurmgres.Split(gresUsed) {
		it, err := slurmgres.Parse(e)
		if err != nil || !it.Counted || it.Detail == "" {
			continue
		}
		d, err := slurmgres.ParseDetail(it.Detail)
		if err != nil {
			continue
		}
		switch {
		case it.Name == slurmgres.GPU && len(migAt[it.Type]) > 0:
			at := migAt[it.Type]
			for k, idx := range d.Index {
				_ = idx // Slurm's index counts every gpu of the node; instances of one profile are taken in order
				if k < len(at) {
					migs[at[k]].Used = true
				}
			}
		case it.Name == slurmgres.GPU:
			for _, idx := range d.Index {
				if idx >= 0 && idx < len(n.GPUs) {
					n.GPUs[idx].Whole = true
				}
			}
		case it.Name == slurmgres.Shard:
			gs := byModel[it.Type]
			if !d.Indexed {
				for k, i := range gs {
					if k < len(d.Taken) {
						n.GPUs[i].Used, n.GPUs[i].Shards = d.Taken[k], d.Total[k]
					}
				}
				continue
			}
			for _, idx := range d.Index {
				if idx >= 0 && idx < len(n.GPUs) {
					n.GPUs[idx].Used = -1
				}
			}
			n.HiddenShards = tresCount(allocTRES, slurmgres.TRES(slurmgres.Shard, ""))
		}
	}
	if len(migs) > 0 {
		n.GPUs = append(n.GPUs, GPU{Index: -1, MIG: migs})
	}
	return n
}

// usable is whether a node in state takes jobs: not down, drained, failing or
// powered off (Slurm's base state and +flags).
func usable(state string) bool {
	for _, f := range strings.FieldsFunc(state, func(r rune) bool { return r == '+' }) {
		switch strings.TrimRight(f, "*~#!%$@^-") {
		case "DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "POWERED_DOWN", "POWERING_DOWN", "NOT_RESPONDING", "FUTURE", "UNKNOWN":
			return false
		}
	}
	return true
}

// tresCount is the count of name in a TRES list (AllocTRES=cpu=2,gres/shard=20).
func tresCount(list, name string) int64 {
	for _, kv := range strings.Split(list, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			n, _ := strconv.ParseInt(v, 10, 64)
			return max(n, 0)
		}
	}
	return 0
}
