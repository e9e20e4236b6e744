package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpumem/gpumem/internal/fence"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// sweepFences clears the limits that outlived their job: a record the epilog never
// removed (gpumemd killed in the prolog or epilog, slurmd restarted, the node
// rebooted into a kept /run) for a job Slurm no longer runs here. It runs at gpumemd's
// start and with --once. A job Slurm says still runs here keeps its limit; when Slurm
// cannot say, nothing is cleared.
func sweepFences(opt options, node string, env fenceEnv, holding func(ctx context.Context, node string) (map[string]string, error), log *slog.Logger) (cleared int) {
	if opt.FenceState == "" {
		return 0
	}
	entries, err := os.ReadDir(opt.FenceState)
	if err != nil || len(entries) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	running, err := holding(ctx, node)
	if err != nil {
		log.Warn("fence sweep: Slurm cannot say which jobs run here; no limit cleared", "err", err)
		return 0
	}
	for _, e := range entries {
		id := e.Name()
		if _, err := fence.ParseJobID(id); err != nil {
			continue // not a record (an atomic write's temporary file, say)
		}
		if _, runs := running[id]; runs {
			continue
		}
		r, ok := readRecord(opt.FenceState, id)
		if ok && r.Cgroup != "" {
			if err := clearRecorded(env, opt.NVML, r); err != nil {
				log.Warn("fence sweep: a limit left by an ended job not cleared", "job", id, "err", err)
				continue
			}
			cleared++
			log.Info("fence sweep: cleared the limits an ended job left", "job", id, "cgroup", r.Cgroup, "gpus", r.GPUs)
		}
		_ = os.Remove(filepath.Join(opt.FenceState, id))
	}
	return cleared
}

// slurmHolding is which jobs hold their allocation on node, from squeue.
func slurmHolding(scontrol string) func(ctx context.Context, node string) (map[string]string, error) {
	return func(ctx context.Context, node string) (map[string]string, error) {
		q := slurmcli.SqueueBeside(scontrol)
		q.Timeout = 15 * time.Second
		return (&slurmcli.JobReader{Squeue: q}).Holding(ctx, node)
	}
}
