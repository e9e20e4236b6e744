package mig

import "github.com/gpumem/gpumem/internal/slicekind"

// HistoryJob is one job as gpumemd's history holds it on a node: what Slurm gave it
// and the most it held, both summed over the devices it ran on.
type HistoryJob struct {
	Kind     string // a slicekind, as gpumemd recorded it
	AllocMiB int64
	PeakMiB  int64
	GPUs     int // devices it ran on; 0 counts as 1
}

// HistoryOptions say how past jobs become demand.
type HistoryOptions struct {
	// Peak sizes each job by the most memory it held rather than what Slurm gave it:
	// a plan for what jobs used, not what they asked for.
	Peak bool
	// Weight is what one past job counts against one pending job (1: the same); the
	// admin's knob for how much last week matters next to today's queue.
	Weight float64
}

// HistoryDemand turns past jobs into demand, one request per device a job ran on, of
// its size per device. Whole-GPU jobs asked for no size and unknown ones for none we
// can read, so neither counts, as with the pending queue. A job that held nothing is
// sized by its allocation even with Peak: it asked for that much.
func HistoryDemand(jobs []HistoryJob, o HistoryOptions) []Demand {
	if o.Weight <= 0 {
		return nil
	}
	var out []Demand
	for _, j := range jobs {
		if j.Kind != slicekind.Shard && j.Kind != slicekind.MIG {
			continue
		}
		n := int64(max(j.GPUs, 1))
		mib := j.AllocMiB
		if o.Peak && j.PeakMiB > 0 {
			mib = j.PeakMiB
		}
		mib = (mib + n - 1) / n // per device, rounded up so the size still fits
		if mib <= 0 {
			continue
		}
		out = append(out, Demand{MiB: mib, Weight: float64(n) * o.Weight})
	}
	return Merge(out)
}
