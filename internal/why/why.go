// Package why explains to a user why their pending gpu:mem job waits: what it asks for
// in gpumem's words, where it could ever run, and what holds it now, in the order a
// user can act on (their own holds and dependencies, the partition or reservation,
// quotas and QOS, jobs ahead of it, then GPU memory itself: free against held per GPU,
// fragmentation, MIG layout), with Slurm's own estimate of its start and the largest
// request that would start now.
//
// Pure: gpumemctl why reads Slurm's client commands and hands an Input over. Everything
// in it is what the user may see (squeue and scontrol honour PrivateData), so nothing
// here reveals another user's job.
package why

import (
	"time"

	"github.com/gpumem/gpumem/internal/slicekind"
)

// Kinds of slice a job asks for (its native GRES after job_submit/gpumem).
const (
	Shard = slicekind.Shard // a slice of a shared GPU, in shards
	MIG   = slicekind.MIG   // a MIG instance of a profile
	Whole = slicekind.GPU   // whole GPUs
)

// Job is the pending job.
type Job struct {
	ID, User, State, Reason string
	Partitions              []string
	Reservation             string
	QOS, Account            string
	Kind                    string // Shard, MIG or Whole; "" for a job that asks for no GPU
	PerGPUMiB               int64  // Shard: what it asks on each GPU
	GPUs                    int64  // per node: GPUs (Shard: GPUs its shards may span; 1 for gpu:mem)
	Type                    string // Whole: the GPU type asked for ("" any); MIG: the profile
	Nodes                   int64
	ReqNodes, ExcNodes      []string // nil: no constraint
	Priority                int64
	Start                   time.Time // Slurm's expected start (squeue --start), zero when it has none
}

// Node is one node as the user may see it.
type Node struct {
	Name       string
	Usable     bool // not down, drained or failing
	State      string
	Partitions []string
	GPUs       []GPU
	// HiddenShards is shards in use on the node that no GPU of it accounts for (Slurm
	// before 23.11 gives a node's shard use only in all, and the jobs the user may see
	// account for Seen of it): somewhere on its GPUs whose Used is not known.
	HiddenShards int64
}

// GPU is one GPU of a node.
type GPU struct {
	Index        int
	Model        string // the GRES type: h100, l4, ...
	Shards, Used int64  // shard slots and those allocated (Used -1: not known per GPU)
	// Seen is, where Used is not known, the shards on it of the jobs the user may see
	// (the rest of the node's use, HiddenShards, may be on it too).
	Seen  int64
	Whole bool // allocated as a whole GPU
	MIG   []Instance
}

// Instance is one MIG instance.
type Instance struct {
	Profile string // 3g.40gb
	Used    bool
}

// Ahead is a pending job before this one in one of its partitions (higher priority)
// that the user may see, with what it asks in all.
type Ahead struct {
	ID       string
	Priority int64
	MiB      int64
}

// Quota is what accounting says of the job's GPU memory quotas (gpumemctl quota's
// figures): the tightest one, in GiB.
type Quota struct {
	Name     string // "account physics", "QOS normal per user", ...
	LimitGiB float64
	HeldGiB  float64
	NeedGiB  float64
}

// Input is one reading of the cluster for one job.
type Input struct {
	Job   Job
	Nodes []Node
	Ahead []Ahead
	Quota *Quota
	// Planned is each node's desired MIG layout (gpumemctl mig plan's files): per node,
	// the instances of each profile it is to have once gpumemd applies it; nil where
	// none is known.
	Planned map[string]map[string]int
	UnitMiB int64 // GPU memory per shard
	Now     time.Time
}

// Cause is one reason the job waits, or a fact about it.
type Cause struct {
	What string `json:"what"` // partition, reservation, quota, priority, memory, mig, hold, start, fit
	Text string `json:"text"`
}

// Explanation is the answer.
type Explanation struct {
	Ask    string   `json:"ask"`   // what the job asks, in gpumem's words
	Where  string   `json:"where"` // where it could ever run
	Causes []Cause  `json:"causes"`
	Map    []string `json:"memory_map"`
}
