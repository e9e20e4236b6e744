package steer

import (
	"time"

	"github.com/gpumem/gpumem/internal/slurmjob"
)

// Steering's view of Slurm, as internal/slurmjob holds it: gpumemctl reads it through
// internal/slurmcli; steer itself runs no command (job_submit links it).

// Use is shards, or whole GPUs, a running job holds on one GPU of one node.
type Use = slurmjob.Use

// AnyGPU is the GPU of a Use Slurm did not say the GPU of (slurmjob.AnyGPU).
const AnyGPU = slurmjob.AnyGPU

// Pending is one pending job that asks for shards.
type Pending = slurmjob.Pending

// Unpin returns the pinned jobs (Pending.Pinned) submitted more than after before now,
// in queue order: a pin that has not started its job by then is taken back, so that it
// never holds a job longer than that.
func Unpin(pending []Pending, now time.Time, after time.Duration) []Pending {
	var out []Pending
	for _, p := range pending {
		if p.Pinned() && !p.Submitted.IsZero() && now.Sub(p.Submitted) > after {
			out = append(out, p)
		}
	}
	return out
}
