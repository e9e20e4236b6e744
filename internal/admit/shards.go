package admit

// ShardsPerGPU is how many Slurm shards a GPU of memMiB gets when one shard stands for
// unitMiB: rounded down, so that shards never promise memory the GPU lacks. gres.conf and
// admission both use it, so Slurm and gpumem count the same shards.
func ShardsPerGPU(memMiB, unitMiB int64) int64 {
	if memMiB <= 0 || unitMiB <= 0 {
		return 0
	}
	return memMiB / unitMiB
}
