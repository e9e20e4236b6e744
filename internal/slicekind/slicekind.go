// Package slicekind is the one home of the names of the kinds of GPU slice a job holds,
// as people and programs read them: gpumemd's history and its jobs API ("kind"), the
// kind label of gpumem_job_memory_allocated_bytes, gpumemctl jobs, policy, advise and the MIG
// planner's history demand. They are saved (in every node's history) and matched by
// dashboards, so they never change.
//
// The placement core keeps kinds of its own, typed (placement.Shard, MIG, Whole), for
// what a demand allows; their String words ("whole" for a whole GPU) are its
// explanations', not these.
package slicekind

import "github.com/gpumem/gpumem/internal/slurmgres"

const (
	// Shard is a memory slice of a shared GPU, held as Slurm's shard GRES.
	Shard = slurmgres.Shard
	// MIG is one or more whole MIG instances.
	MIG = "mig"
	// GPU is one or more whole GPUs, held as Slurm's gpu GRES.
	GPU = slurmgres.GPU
	// Unknown is a job whose allocation could not be read: measured, never acted on.
	Unknown = "unknown"
)
