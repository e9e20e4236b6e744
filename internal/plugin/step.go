package plugin

import (
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/request"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Step rewrites the gpu:mem request of a job step (srun inside an sbatch or salloc
// allocation) into a share of what its job holds. A step never passes through
// job_submit and may only take GRES its job was granted, and the job holds exactly what
// job_submit rewrote its own request into (in tres_per_node, e.g. gres:shard:20 or
// gres:gpu:3g.40gb:1, or in tres_per_job for --gpus), so no placement is needed here:
// only the memory of what the job holds, which memOf gives for a MIG profile or GPU type
// (false: unknown, and then only the GPU count is checked).
func Step(stepPerNode string, job Fields, jobID uint32, shardUnitMiB int64, memOf MemOf) (string, error) {
	st, err := request.Parse(request.PerNode, stepPerNode)
	if err != nil {
		return "", err
	}
	i := st.Find(request.GPUMem)
	if i < 0 {
		return stepPerNode, nil
	}
	mib, gpus := st.Entries[i].MiB, int64(1)
	if j := st.Find(request.GPUCount); j >= 0 {
		gpus = st.Entries[j].GPUs
	}
	held := join(job.PerNode, job.PerJob)
	jt, err := request.Parse(request.PerNode, held)
	if err != nil {
		return "", refusal.StepJobUnreadable(jobID, held, err)
	}
	// The step's own GPU count is folded into the GRES it gets.
	drop := [3]bool{request.GPUMem: true, request.GPUCount: true}
	if shards, ok := shardsOf(jt); ok {
		need := shard.For(mib, shardUnitMiB)
		switch {
		case gpus > 1:
			return "", refusal.StepGPUsOfSlice(jobID, slurmgres.Of(slurmgres.Shard, "", shards).String(), gpus)
		case need > shards:
			return "", refusal.StepMoreThanSlice(mib, jobID, shards*shardUnitMiB, slurmgres.Of(slurmgres.Shard, "", shards).String())
		}
		return st.Rewrite(drop, slurmgres.Of(slurmgres.Shard, "", need).String(), st.Prefix()), nil
	}
	if k := jt.Find(request.GPUCount); k >= 0 {
		held := jt.Entries[k]
		if gpus > held.GPUs {
			return "", refusal.StepMoreGPUs(gpus, jobID, held.GPUs)
		}
		if has, ok := memOf(held.Type); ok && held.Type != "" && mib > has {
			return "", refusal.StepMorePerGPU(mib, jobID, has, slurmgres.Of(slurmgres.GPU, held.Type, held.GPUs).String())
		}
		return st.Rewrite(drop, slurmgres.Of(slurmgres.GPU, held.Type, gpus).String(), st.Prefix()), nil
	}
	return "", refusal.StepNoMemory(jobID, held)
}

// MemOf gives the memory of one device of a MIG profile or GPU type, the least the
// cluster has of it; false when unknown.
type MemOf func(name string) (int64, bool)

// memOf is the MemOf of the inventory in use (loaded now if it was not), with the MIG
// catalog's real sizes for profiles the inventory does not list.
func (p *Plugin) memOf(name string) (int64, bool) {
	var m int64
	if c := p.current(true).cluster; c != nil {
		for _, n := range c.Nodes {
			for _, g := range n.GPUs {
				if !g.MIG && g.Type == name && (m == 0 || g.MemoryMiB < m) {
					m = g.MemoryMiB
				}
				for _, in := range g.Instances {
					if in.Profile == name && (m == 0 || in.MemoryMiB < m) {
						m = in.MemoryMiB
					}
				}
			}
		}
	}
	if m > 0 {
		return m, true
	}
	for _, model := range mig.Catalog() {
		if pr, err := model.Profile(name); err == nil && (m == 0 || pr.MiB < m) {
			m = pr.MiB
		}
	}
	return m, m > 0
}

// shardsOf finds a shard[:TYPE]:N entry, which request leaves as an entry it does not own.
func shardsOf(t request.TRES) (int64, bool) {
	for _, e := range t.Entries {
		if it, err := slurmgres.Parse(e.Raw); err == nil && it.Name == slurmgres.Shard && it.Counted && it.Count > 0 {
			return it.Count, true
		}
	}
	return 0, false
}
