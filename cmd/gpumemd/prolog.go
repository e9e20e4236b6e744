package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/fencehook"
	"github.com/gpumem/gpumem/internal/inventory"
)

// taskProlog is `gpumemd task-prolog`, a Slurm TaskProlog for GPUs run under CUDA MPS:
// MPS can fence a client's memory (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), which shards
// alone cannot, so the job's shards x unit become a driver-enforced limit. slurmd sets
// every "export NAME=value" line the prolog prints in the task's environment.
//
// A TaskProlog that fails fails the task, so anything unexpected prints nothing and
// only explains itself on stderr.
func taskProlog(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	path := config.Path()
	if len(args) == 2 && args[0] == "--config" {
		path = args[1]
	} else if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: gpumemd task-prolog [--config gpumem.conf]")
		return 0
	}
	shared, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "gpumemd task-prolog:", err, "(using defaults where wrong)")
	}
	if line := fenceLine(path, getenv); line != "" {
		fmt.Fprintln(stdout, line)
	}
	line, err := mpsLimit(getenv("SLURM_SHARDS_ON_NODE"), getenv("CUDA_VISIBLE_DEVICES"), shared.ShardUnitMiB)
	if err != nil {
		fmt.Fprintln(stderr, "gpumemd task-prolog: no MPS memory limit:", err)
		return 0
	}
	if line != "" {
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// fenceLine tells the job which GPU memory fence it got: what gpumemd's prolog
// recorded for it (driver, or none where its node could not fence its shards), else
// hardware for a job with whole GPUs or MIG instances and no shards. A job without GPUs
// gets no line.
func fenceLine(path string, getenv func(string) string) string {
	node, _ := config.LoadGpumemd(path)
	if f := fencehook.JobFence(node.FenceState, getenv("SLURM_JOB_ID")); f != "" {
		return "export GPUMEM_FENCE=" + f
	}
	switch v := getenv("CUDA_VISIBLE_DEVICES"); {
	case v == "" || v == "NoDevFiles":
		return ""
	case getenv("SLURM_SHARDS_ON_NODE") != "":
		return "export GPUMEM_FENCE=" + inventory.FenceNone
	}
	return "export GPUMEM_FENCE=" + inventory.FenceHardware
}

// mpsLimit renders the export line for a job holding shards shards on the devices it
// sees, split evenly as Slurm does not say how a multi-GPU shard job's shards split.
// Jobs without shards (whole GPUs, MIG) get no line: their device is their limit.
func mpsLimit(shards, visible string, unitMiB int64) (string, error) {
	if shards == "" {
		return "", nil
	}
	n, err := strconv.ParseInt(shards, 10, 64)
	if err != nil || n <= 0 {
		return "", fmt.Errorf("SLURM_SHARDS_ON_NODE=%q is not a shard count", shards)
	}
	devices := strings.Split(visible, ",")
	if visible == "" || visible == "NoDevFiles" {
		return "", fmt.Errorf("CUDA_VISIBLE_DEVICES=%q names no GPU", visible)
	}
	each := n * unitMiB / int64(len(devices))
	parts := make([]string, len(devices))
	for i := range devices {
		// MPS numbers devices as the client sees them: 0..N-1 after CUDA_VISIBLE_DEVICES.
		parts[i] = fmt.Sprintf("%d=%dM", i, each)
	}
	return "export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + strings.Join(parts, ","), nil
}
