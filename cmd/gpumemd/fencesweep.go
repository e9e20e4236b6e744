package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpumem/gpumem/internal/fencehook"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// sweepFences clears the limits that outlived their job (fencehook.Sweep), with --once,
// and at gpumemd's start and then every fenceSweepEvery (sweepFencesEvery).
func sweepFences(opt options, node string, env fencehook.Env, holding fencehook.Holding, log *slog.Logger) (cleared int) {
	return fencehook.Sweep(opt.FenceState, opt.NVML, node, env, holding, log)
}

// fenceSweepEvery is how often a running gpumemd sweeps. Records are left behind not
// only by a crash: on Slurm 24.05 to 25.11 an epilog sometimes starts without root and
// cannot remove its record (fencehook's notRoot; one job in three in a lab's fence
// tests on 24.11), so waiting for gpumemd's next start would let them pile up. A sweep
// costs one squeue of this node, and none while no record is there.
const fenceSweepEvery = 5 * time.Minute

// sweepFencesEvery runs sweep now and then every every, until ctx ends.
func sweepFencesEvery(ctx context.Context, every time.Duration, sweep func()) {
	for {
		sweep()
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// slurmHolding is which jobs hold their allocation on node, from squeue.
func slurmHolding(scontrol string) fencehook.Holding {
	return func(ctx context.Context, node string) (map[string]string, error) {
		q := slurmcli.SqueueBeside(scontrol)
		q.Timeout = 15 * time.Second
		return (&slurmcli.JobReader{Squeue: q}).Holding(ctx, node)
	}
}
