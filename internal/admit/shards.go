package admit

import "fmt"

// ShardsPerGPU is how many Slurm shards a GPU of memMiB gets when one shard stands for
// unitMiB: rounded down, so that shards never promise memory the GPU lacks. gres.conf and
// admission both use it, so Slurm and gpumem count the same shards.
func ShardsPerGPU(memMiB, unitMiB int64) int64 {
	if memMiB <= 0 || unitMiB <= 0 {
		return 0
	}
	return memMiB / unitMiB
}

// ShardUnit reads a configured shard unit: 0 means DefaultShardUnitMiB, and a negative
// one is refused. Admission and gres.conf both take their unit through it, so the two
// can never disagree about what one shard is.
func ShardUnit(unitMiB int64) (int64, error) {
	switch {
	case unitMiB == 0:
		return DefaultShardUnitMiB, nil
	case unitMiB < 0:
		return 0, fmt.Errorf("shard unit %d MiB; want a positive size such as 1024 (1 GiB)", unitMiB)
	}
	return unitMiB, nil
}
