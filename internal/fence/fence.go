// Package fence decides the GPU memory fence of a shard job on one node: which hard
// limit goes on which GPU, on which cgroup, and which fence each GPU can hold at all.
// The decisions are pure; the NVML calls go through the small Device interface, so the
// same code runs against the real library, go-nvml's mock and the lab's fake NVML.
//
// The driver fence is NVML's per-cgroup limit (nvmlDeviceSetMemoryLimits_v1): a hard
// limit in bytes for one GPU and one cgroup v2 directory, which the driver enforces on
// every process in that cgroup and its children. gpumemd's prolog sets it on the job's
// cgroup, so every step of the job falls under the one limit.
package fence

import (
	"fmt"
	"sort"

	"github.com/gpumem/gpumem/internal/inventory"
)

// Slice is what Slurm allocated a job on one GPU of this node: shards, or the whole GPU.
// It comes from Slurm's own record of the job (scontrol -d show job), never from the
// job's environment.
type Slice struct {
	GPU    int   // NVML index, the order of the node's GRES records
	Shards int64 // shards held on that GPU; 0 with Whole
	Whole  bool  // the GPU itself (or a MIG instance of it)
	// Spread is the job's shards over all the GPUs Slurm listed without saying how
	// many lie on each (22.05, a job's shards over several GPUs); 0 where it said.
	Spread int64
}

// Limit is one hard limit: GPU (NVML index) at Bytes, on the job's cgroup.
type Limit struct {
	GPU   int
	Bytes uint64
}

// Decision is what a job gets on this node.
type Decision struct {
	Limits []Limit // driver limits to set, one per GPU, by GPU index
	// Fence is the weakest fence among the job's GPUs (what the job can count on), ""
	// for a job with no GPU here.
	Fence string
	// Unfenced lists the GPUs where the job holds shards but the node holds no fence
	// beyond gpumemd's measurement and kill.
	Unfenced []int
	// Spread lists the GPUs whose limit is the most the job may hold there, because
	// Slurm did not say how its shards are spread over them.
	Spread []int
}

// strength orders the fences, weakest first.
var strength = map[string]int{inventory.FenceNone: 0, inventory.FenceMPS: 1, inventory.FenceDriver: 2, inventory.FenceHardware: 3}

// Plan decides the limits of a job holding slices on a node with gpus (this node's
// inventory, where each GPU says the fence gpumemd found on it). A shard slice on a
// driver-fenced GPU gets a hard limit of shards x unitMiB; a whole GPU or a MIG
// instance is its own limit and gets none. A slice on a GPU the inventory does not
// hold, or larger than the GPU, is an error: the allocation and the node disagree.
func Plan(slices []Slice, gpus []inventory.GPU, unitMiB int64) (Decision, error) {
	if unitMiB <= 0 {
		return Decision{}, fmt.Errorf("fence: shard unit %d MiB; want > 0", unitMiB)
	}
	byIndex := map[int]inventory.GPU{}
	for _, g := range gpus {
		byIndex[g.Index] = g
	}
	shards := map[int]int64{}
	var d Decision
	weakest := -1
	note := func(f string) {
		if weakest < 0 || strength[f] < weakest {
			weakest, d.Fence = strength[f], f
		}
	}
	for _, s := range slices {
		g, ok := byIndex[s.GPU]
		if !ok {
			return Decision{}, fmt.Errorf("fence: the job holds GPU %d, which this node's inventory does not list", s.GPU)
		}
		switch {
		case s.Whole:
			note(inventory.FenceHardware) // the device is the limit
		case s.Shards < 0:
			return Decision{}, fmt.Errorf("fence: %d shards on GPU %d", s.Shards, s.GPU)
		case s.Shards > 0 && g.MIG:
			return Decision{}, fmt.Errorf("fence: the job holds shards on GPU %d, which is in MIG mode", s.GPU)
		case s.Spread > 0:
			// Slurm 22.05 did not say how many of them lie here: the limit is what
			// the job may hold here at most (all of them, or the GPU), never an even
			// split that would fail a job whose share here is larger.
			shards[s.GPU] += min(s.Spread, g.MemoryMiB/unitMiB)
			d.Spread = append(d.Spread, s.GPU)
		case s.Shards > 0:
			shards[s.GPU] += s.Shards
		}
	}
	idx := make([]int, 0, len(shards))
	for i := range shards {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		g := byIndex[i]
		mib := shards[i] * unitMiB
		if shards[i] > g.MemoryMiB/unitMiB+1 || mib > g.MemoryMiB {
			return Decision{}, fmt.Errorf("fence: %d shards of %d MiB on GPU %d exceed its %d MiB", shards[i], unitMiB, i, g.MemoryMiB)
		}
		if g.FenceOf() == inventory.FenceDriver {
			note(inventory.FenceDriver)
			d.Limits = append(d.Limits, Limit{GPU: i, Bytes: uint64(mib) << 20})
			continue
		}
		// gpumemd sets no MPS limit itself (docs/gpumemd.md): whatever another tool
		// wrote, this job's slice here is held only by the measurement and kill.
		note(inventory.FenceNone)
		d.Unfenced = append(d.Unfenced, i)
	}
	return d, nil
}

// Promised says whether any of gpus (this node's inventory) said it holds the driver
// fence: only then does a hook ask Slurm or NVML anything for a job.
func Promised(gpus []inventory.GPU) bool {
	for _, g := range gpus {
		if g.FenceOf() == inventory.FenceDriver {
			return true
		}
	}
	return false
}
