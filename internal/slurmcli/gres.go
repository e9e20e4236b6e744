package slurmcli

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/slurmgres"
	"github.com/gpumem/gpumem/internal/slurmjob"
)

// Use is shards, or whole GPUs, a running job holds on one GPU of one node.
type Use = slurmjob.Use

// Bounds on what one record may expand to. A real job spans at most the cluster and a
// node has a handful of GPUs; anything larger is a broken or hostile record, refused
// before it is built.
const (
	MaxJobNodes = 1 << 16
	MaxNodeGPUs = slurmgres.MaxGPUs
)

// nodeUses reads the GRES detail of one node: what Slurm prints after GRES= in
// `scontrol -d show job`, and as one entry of gres_detail in its JSON. Its GPU and shard
// GRES with a count and a per-GPU detail are read (gpu:h100:1(IDX:1),
// shard:20(20/80,0/80), gres/shard:l4_g0:7(7/22,0/22)); anything else is skipped.
func nodeUses(node, detail string) ([]Use, error) {
	var uses []Use
	for _, g := range slurmgres.Split(detail) {
		it, err := slurmgres.Parse(g)
		if err != nil || it.Name != slurmgres.GPU && it.Name != slurmgres.Shard || !it.Counted || it.Detail == "" {
			continue
		}
		per, err := perGPU(it)
		if err != nil {
			return nil, fmt.Errorf("GRES %q: %v", clip(detail), err)
		}
		for _, u := range per {
			u.Node = node
			uses = append(uses, u)
		}
	}
	return uses, nil
}

// perGPU reads the per-GPU detail of one GRES of a job's node detail.
func perGPU(it slurmgres.Item) ([]Use, error) {
	whole := it.Name == slurmgres.GPU
	d, err := slurmgres.ParseDetail(it.Detail)
	if err != nil {
		return nil, err
	}
	if d.Indexed {
		out := make([]Use, len(d.Index))
		for j, i := range d.Index {
			out[j] = Use{GPU: i, Whole: whole}
			if !whole {
				// One GPU holds them all; over several, Slurm did not say how many
				// each holds: an even share for counts, the whole as Spread.
				out[j].Shards = it.Count / int64(len(d.Index))
				if len(d.Index) > 1 {
					out[j].Spread = it.Count
				}
			}
		}
		return out, nil
	}
	var out []Use
	for i, n := range d.Taken {
		if n > 0 {
			out = append(out, Use{GPU: i, Shards: n, Whole: whole})
		}
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
