// Package shard holds the arithmetic of Slurm shards as gpumem uses them: what one shard
// stands for, how many a GPU has, how many a request takes, and the Type a shared GPU's
// shards carry when typed per GPU. gres.conf, admission, pinning and steering all count
// through it, so Slurm and gpumem can never disagree about a shard.
package shard

import "fmt"

// DefaultUnitMiB is what one shard stands for when the configuration leaves it unset.
const DefaultUnitMiB = 1024

// Unit reads a configured shard unit: 0 means DefaultUnitMiB, and a negative one is
// refused.
func Unit(unitMiB int64) (int64, error) {
	switch {
	case unitMiB == 0:
		return DefaultUnitMiB, nil
	case unitMiB < 0:
		return 0, fmt.Errorf("shard unit %d MiB; want a positive size such as 1024 (1 GiB)", unitMiB)
	}
	return unitMiB, nil
}

// PerGPU is how many shards a GPU of memMiB gets: rounded down, so that shards never
// promise memory the GPU lacks.
func PerGPU(memMiB, unitMiB int64) int64 {
	if memMiB <= 0 || unitMiB <= 0 {
		return 0
	}
	return memMiB / unitMiB
}

// For is how many shards hold mib of GPU memory: rounded up, so a job gets at least
// what it asked. unitMiB must be positive (see Unit).
func For(mib, unitMiB int64) int64 { return (mib + unitMiB - 1) / unitMiB }

// TypeName is the Type gres.conf gives the shards (and gpu record) of the shared GPU of
// model and NVML index idx when shards are typed per GPU, e.g. h100_g1. A plain shard:N
// or gpu:N request still matches every type.
func TypeName(model string, idx int) string { return fmt.Sprintf("%s_g%d", model, idx) }
