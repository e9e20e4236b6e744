// Package slurmjob holds what gpumem reads of Slurm's jobs as plain values: the GPUs and
// shards a running job holds, and a pending job's shard request. internal/slurmcli fills
// them from Slurm's commands; internal/steer, which job_submit links and which therefore
// runs no command, reads them. Keeping them here gives both one definition without
// pulling the command runner into slurmctld.
package slurmjob

import (
	"regexp"
	"strings"
	"time"
)

// Use is shards, or whole GPUs, a running job holds on one GPU of one node.
type Use struct {
	Node   string
	GPU    int   // GRES index on the node: the order of its gres.conf lines, NVML order
	Shards int64 // 0 when Whole
	Whole  bool  // the GPU is taken as a gpu GRES
	// Spread is, where Slurm printed only the GPUs a job's shards lie on and not how
	// many on each (22.05's shard:N(IDX:0-1)), the N over all of them; Shards is then
	// an even share, a reading for counts and never for a limit. 0 where Slurm said.
	Spread int64
	// Type is the GRES type asked for (a model, or a per-GPU shard type such as
	// h100_g1) where GPU is AnyGPU; "" otherwise.
	Type string
}

// AnyGPU is the GPU of a Use whose index Slurm's record did not give (a job read from
// squeue, which prints what a job holds per node but not on which GPU): it may be any
// GPU of the node of its Type.
const AnyGPU = -1

// Pending is one pending job that asks for shards.
type Pending struct {
	ID         string
	Partitions []string
	Shards     int64
	Type       string    // the shard Type asked for, "" for any
	ReqNodes   string    // the required node list, "" for none
	Submitted  time.Time // zero when not read
}

// gpuTypeRe is the form of a per-GPU type (internal/shard.TypeName): model, _g, NVML index.
var gpuTypeRe = regexp.MustCompile(`^.+_g\d+$`)

// Pinned reports whether the job asks for shards of one per-GPU type on one required
// node, as job_submit pins a job with ShardTypes = per-gpu.
func (p Pending) Pinned() bool {
	return gpuTypeRe.MatchString(p.Type) && p.ReqNodes != "" && !strings.ContainsAny(p.ReqNodes, ",[")
}
