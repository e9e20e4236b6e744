// Package advise turns the per-job GPU memory history of every node into right-sizing
// advice: for each user, account or job name, what its jobs asked for against what they
// used at peak, the gpu:mem size that would have held a given percentile of them, and
// the GiB-hours the asking beyond the peak kept from other jobs.
//
// It is pure: gpumemctl advise collects the history from each node's gpumemd.
package advise

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/slicekind"
)

// NodeJob is one job's history on one node.
type NodeJob struct {
	Node string
	Job  api.Job
}

// Options shape the advice.
type Options struct {
	By         string  // "user", "account" or "name"
	Percentile float64 // of the jobs' peaks the advised size must hold, e.g. 95
	UnitMiB    int64   // sizes are advised in whole units (the shard unit)
	MinJobs    int     // groups with fewer jobs get no advised size
}

// Row is the advice for one group.
type Row struct {
	Group string `json:"group"`
	Jobs  int    `json:"jobs"`
	// Per GPU, in bytes: the median of what the jobs asked, their peaks' median, the
	// chosen percentile and the maximum.
	AskedBytes   int64 `json:"asked_bytes"`
	PeakP50Bytes int64 `json:"peak_p50_bytes"`
	PeakPctBytes int64 `json:"peak_pct_bytes"`
	PeakMaxBytes int64 `json:"peak_max_bytes"`
	// Advised is the gpu:mem size (per GPU) that holds the percentile of the peaks, in
	// whole units; "" when the group has too few jobs.
	Advised      string  `json:"advised,omitempty"`
	AdvisedBytes int64   `json:"advised_bytes,omitempty"`
	OverGiBHours float64 `json:"over_asked_gib_hours"` // (asked - peak) x run time, summed
}

// Kinds of allocation that are sized by gpu:mem: shards. A whole GPU or a MIG instance is
// the device's size whatever was asked, so asked-versus-peak says nothing of the request.
const sized = slicekind.Shard

// Advise groups the jobs and computes each group's row, largest waste first. A job seen
// on several nodes counts once: its per-GPU ask and peak are the largest of its nodes',
// its waste the sum.
func Advise(jobs []NodeJob, o Options) ([]Row, error) {
	if o.Percentile <= 0 || o.Percentile > 100 {
		return nil, fmt.Errorf("percentile %v: want more than 0 and at most 100", o.Percentile)
	}
	if o.UnitMiB <= 0 {
		return nil, fmt.Errorf("unit %d MiB: want a positive size", o.UnitMiB)
	}
	type merged struct {
		group       string
		asked, peak int64
		over        float64
	}
	byJob := map[string]*merged{}
	var order []string
	for _, nj := range jobs {
		j := nj.Job
		if j.Kind != sized {
			continue
		}
		g, err := group(j, o.By)
		if err != nil {
			return nil, err
		}
		n := int64(max(1, len(j.GPUs)))
		asked, peak := j.AllocBytes/n, j.PeakBytes/n
		hours := float64(max(0, j.End-j.Start)) / 3600
		m := byJob[j.ID]
		if m == nil {
			m = &merged{group: g}
			byJob[j.ID] = m
			order = append(order, j.ID)
		}
		m.asked, m.peak = max(m.asked, asked), max(m.peak, peak)
		m.over += float64(max(0, j.AllocBytes-j.PeakBytes)) / (1 << 30) * hours
	}
	groups := map[string][]*merged{}
	for _, id := range order {
		m := byJob[id]
		groups[m.group] = append(groups[m.group], m)
	}
	unit := o.UnitMiB << 20
	var rows []Row
	for g, ms := range groups {
		asked := make([]int64, len(ms))
		peaks := make([]int64, len(ms))
		r := Row{Group: g, Jobs: len(ms)}
		for i, m := range ms {
			asked[i], peaks[i] = m.asked, m.peak
			r.OverGiBHours += m.over
		}
		slices.Sort(asked)
		slices.Sort(peaks)
		r.AskedBytes = Percentile(asked, 50)
		r.PeakP50Bytes = Percentile(peaks, 50)
		r.PeakPctBytes = Percentile(peaks, o.Percentile)
		r.PeakMaxBytes = peaks[len(peaks)-1]
		if len(ms) >= max(1, o.MinJobs) {
			r.AdvisedBytes = max(1, (r.PeakPctBytes+unit-1)/unit) * unit
			r.Advised = Size(r.AdvisedBytes)
		}
		r.OverGiBHours = math.Round(r.OverGiBHours*100) / 100
		rows = append(rows, r)
	}
	sort.Slice(rows, func(a, b int) bool {
		if rows[a].OverGiBHours != rows[b].OverGiBHours {
			return rows[a].OverGiBHours > rows[b].OverGiBHours
		}
		return rows[a].Group < rows[b].Group
	})
	return rows, nil
}

func group(j api.Job, by string) (string, error) {
	var g string
	switch by {
	case "user":
		g = j.User
	case "account":
		g = j.Account
	case "name":
		g = j.Name
	default:
		return "", fmt.Errorf("--by %q: want user, account or name", by)
	}
	if g == "" {
		g = "(unknown)"
	}
	return g, nil
}

// Percentile is the nearest-rank percentile p of sorted values.
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Size writes bytes as a gpu:mem size: whole GiB as "20g", else MiB as "1536m".
func Size(b int64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%dg", b>>30)
	}
	return fmt.Sprintf("%dm", (b+(1<<20)-1)>>20)
}
