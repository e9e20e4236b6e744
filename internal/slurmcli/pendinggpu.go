package slurmcli

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// PendingGPU is one pending job's request for GPUs of one type (a MIG profile or a GPU
// model), as the job_submit plugin wrote it.
type PendingGPU struct {
	ID    string
	Type  string
	Count int64
}

// ParsePendingGPUTypes reads the same squeue output as ParsePending and returns the
// typed gpu requests; jobs without one are left out.
func ParsePendingGPUTypes(out string) ([]PendingGPU, error) {
	var jobs []PendingGPU
	lines, err := pendingFields(out)
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		// Typed gpu GRES (gpu:3g.20gb:2, gres:gpu:3g.20gb:2 or gres/gpu:3g.20gb:2, as
		// releases print them).
		for _, m := range requests(strings.TrimSpace(f[2]), slurmgres.GPU, true) {
			if m.Count <= 0 || m.Count > MaxNodeGPUs {
				return nil, fmt.Errorf("squeue, job %s: gpu count %q; want 1 to %d", strings.TrimSpace(f[0]), m.printed, MaxNodeGPUs)
			}
			jobs = append(jobs, PendingGPU{ID: strings.TrimSpace(f[0]), Type: m.Type, Count: m.Count})
		}
	}
	return jobs, nil
}

// PendingGRES is a pending job that asks for typed GPUs (MIG instances or whole GPUs)
// and no shards: what job_submit made of a gpu:mem request that shards could not serve.
type PendingGRES struct {
	ID        string
	TRES      string    // the TRES per node as squeue prints it, e.g. gres/gpu:3g.20gb:2
	Submitted time.Time // zero when not read
}

// ParsePendingGRES reads the same squeue output as ParsePending and returns the jobs
// that ask for typed GPUs and no shards, so the two lists never hold one job twice.
func ParsePendingGRES(out string, loc *time.Location) ([]PendingGRES, error) {
	var jobs []PendingGRES
	lines, err := pendingFields(out)
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		tres := strings.TrimSpace(f[2])
		if len(requests(tres, slurmgres.Shard, false)) > 0 || len(requests(tres, slurmgres.GPU, true)) == 0 {
			continue
		}
		j := PendingGRES{ID: strings.TrimSpace(f[0]), TRES: tres}
		if j.Submitted, err = submitted(f, loc); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}
