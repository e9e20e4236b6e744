package slurmcli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmjob"
)

// Use is shards, or whole GPUs, a running job holds on one GPU of one node.
type Use = slurmjob.Use

// Bounds on what one record may expand to. A real job spans at most the cluster and a
// node has a handful of GPUs; anything larger is a broken or hostile record, refused
// before it is built.
const (
	MaxJobNodes = 1 << 16
	MaxNodeGPUs = 1 << 10
)

// gresRe is one GRES of a node's detail: gpu:h100:1(IDX:1), shard:20(20/80,0/80),
// gres/shard:l4_g0:7(7/22,0/22).
var gresRe = regexp.MustCompile(`(?:^|,)(?:gres/)?(gpu|shard)(?::[^:,(]+)?:(\d+)\(([^)]*)\)`)

// nodeUses reads the GRES detail of one node: what Slurm prints after GRES= in
// `scontrol -d show job`, and as one entry of gres_detail in its JSON.
func nodeUses(node, detail string) ([]Use, error) {
	var uses []Use
	for _, g := range gresRe.FindAllStringSubmatch(detail, -1) {
		per, err := perGPU(g[1] == "gpu", g[2], g[3])
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

// perGPU reads the parenthesised part of one GRES of a job's node detail.
func perGPU(whole bool, count, detail string) ([]Use, error) {
	if list, ok := strings.CutPrefix(detail, "IDX:"); ok {
		if list == "N/A" || list == "" {
			return nil, nil // 22.05 prints "(IDX:)" for a type the job took none of
		}
		idx, err := expandRanges(list)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.ParseInt(count, 10, 64)
		out := make([]Use, len(idx))
		for j, i := range idx {
			out[j] = Use{GPU: i, Whole: whole}
			if !whole {
				// A job's shards on a node come from one GPU unless the site allows
				// more; an even split is the best reading of an index list.
				out[j].Shards = n / int64(len(idx))
			}
		}
		return out, nil
	}
	parts := strings.Split(detail, ",")
	if len(parts) > MaxNodeGPUs {
		return nil, fmt.Errorf("more than %d GPUs", MaxNodeGPUs)
	}
	var out []Use
	for i, part := range parts {
		took, _, ok := strings.Cut(part, "/")
		n, err := strconv.ParseInt(took, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("per-GPU use %q; want TAKEN/TOTAL or IDX:LIST", part)
		}
		if n > 0 {
			out = append(out, Use{GPU: i, Shards: n, Whole: whole})
		}
	}
	return out, nil
}

// expandRanges expands a GRES index list such as 0-1,3, at most MaxNodeGPUs indices.
func expandRanges(list string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(list, ",") {
		lo, hi, _ := strings.Cut(part, "-")
		if hi == "" {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a || a < 0 {
			return nil, fmt.Errorf("range %q; want N or N-M with 0 <= N <= M", part)
		}
		if b-a >= MaxNodeGPUs-len(out) {
			return nil, fmt.Errorf("index list %q: more than %d GPUs", clip(list), MaxNodeGPUs)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
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
