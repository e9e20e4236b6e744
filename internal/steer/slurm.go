package steer

import (
	"regexp"
	"strings"
	"time"
)

// Steering's view of Slurm. gpumemctl reads it through internal/slurmcli and converts;
// steer itself runs no command (job_submit links it), so it keeps its own types.

// Use is shards, or whole GPUs, a running job holds on one GPU of one node; the same
// fields as slurmcli.Use.
type Use struct {
	Node   string
	GPU    int   // GRES index on the node: the order of its gres.conf lines, NVML order
	Shards int64 // 0 when Whole
	Whole  bool  // the GPU is taken as a gpu GRES
}

// Pending is one pending job that asks for shards; the same fields as
// slurmcli.Pending.
type Pending struct {
	ID         string
	Partitions []string
	Shards     int64
	Type       string    // the shard Type asked for, "" for any
	ReqNodes   string    // the required node list, "" for none
	Submitted  time.Time // zero when not read
}

// gpuTypeRe is the form of a per-GPU type (shard.TypeName): model, _g, NVML index.
var gpuTypeRe = regexp.MustCompile(`^.+_g\d+$`)

// Pinned reports whether the job asks for shards of one per-GPU type on one required
// node, as job_submit pins a job with ShardTypes = per-gpu.
func (p Pending) Pinned() bool {
	return gpuTypeRe.MatchString(p.Type) && p.ReqNodes != "" && !strings.ContainsAny(p.ReqNodes, ",[")
}

// Unpin returns the pinned jobs (Pending.Pinned) submitted more than after before now,
// in queue order: a pin that has not started its job by then is taken back, so that it
// never holds a job longer than that.
func Unpin(pending []Pending, now time.Time, after time.Duration) []Pending {
	var out []Pending
	for _, p := range pending {
		if p.Pinned() && !p.Submitted.IsZero() && now.Sub(p.Submitted) > after {
			out = append(out, p)
		}
	}
	return out
}
