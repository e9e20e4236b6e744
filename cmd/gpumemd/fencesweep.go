package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpumem/gpumem/internal/fencehook"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// sweepFences clears the limits that outlived their job (fencehook.Sweep), at gpumemd's
// start and with --once.
func sweepFences(opt options, node string, env fencehook.Env, holding fencehook.Holding, log *slog.Logger) (cleared int) {
	return fencehook.Sweep(opt.FenceState, opt.NVML, node, env, holding, log)
}

// slurmHolding is which jobs hold their allocation on node, from squeue.
func slurmHolding(scontrol string) fencehook.Holding {
	return func(ctx context.Context, node string) (map[string]string, error) {
		q := slurmcli.SqueueBeside(scontrol)
		q.Timeout = 15 * time.Second
		return (&slurmcli.JobReader{Squeue: q}).Holding(ctx, node)
	}
}
