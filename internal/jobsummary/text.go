package jobsummary

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/slicekind"
	"github.com/gpumem/gpumem/internal/units"
)

// Job is one job as its user reads it: what sacct says of it and the summaries its
// nodes wrote.
type Job struct {
	ID      string // as sacct prints it: 123, 123_4, 123+1
	State   string // sacct's State
	Elapsed string // sacct's Elapsed
	Sums    []Summary
	Errs    []error // tokens that could not be read
}

// Fit is the gpu:mem size, per GPU, that would have held the job: its highest peak on
// any one GPU, rounded up to whole GiB (gpu:mem's unit of shards), at least 1g. ok is
// false when no summary gives a peak.
func Fit(sums []Summary) (mib int64, ok bool) {
	for _, s := range sums {
		for _, g := range s.GPUs {
			mib, ok = max(mib, g.PeakMiB), true
		}
	}
	if !ok {
		return 0, false
	}
	return max((mib+1023)/1024, 1) * 1024, true
}

// pct is part of whole in whole percent, rounded down ("-" without a whole).
func pct(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", part*100/whole)
}

var kindWords = map[string]string{
	slicekind.Shard: "a slice (shards) of a shared GPU",
	slicekind.MIG:   "a MIG instance",
	slicekind.GPU:   "a whole GPU",
}

// Write prints the job for its user: per node and GPU the slice, peak and mean, the
// time over the slice with warnings and kills, the memory efficiency and the size that
// would have held the job, as seff and jobstats word theirs; and the memory over time.
func Write(w io.Writer, j Job) {
	fmt.Fprintf(w, "Job ID: %s\n", j.ID)
	if j.State != "" {
		fmt.Fprintf(w, "State: %s\n", j.State)
	}
	if j.Elapsed != "" {
		fmt.Fprintf(w, "Job Wall-clock time: %s\n", j.Elapsed)
	}
	for _, err := range j.Errs {
		fmt.Fprintf(w, "GPU memory summary unreadable: %v\n", err)
	}
	if len(j.Sums) == 0 {
		if len(j.Errs) == 0 {
			fmt.Fprintln(w, "GPU memory: no gpumem summary (not a gpu:mem job, not ended yet, or its node has not written it yet)")
		}
		return
	}
	var slice, peak int64
	for _, s := range j.Sums {
		fmt.Fprintf(w, "GPU memory on %s: %s\n", s.Node, kindWords[s.Kind])
		for _, g := range s.GPUs {
			fmt.Fprintf(w, "  GPU %d: peak %s of its %s (%s), mean %s (%s)\n", g.Index,
				units.GiB(g.PeakMiB), units.GiB(g.SliceMiB), pct(g.PeakMiB, g.SliceMiB),
				units.GiB(g.MeanMiB), pct(g.MeanMiB, g.SliceMiB))
			slice += g.SliceMiB
			peak += g.PeakMiB
		}
		if s.MoreGPUs {
			fmt.Fprintf(w, "  (more GPUs on %s than the %d shown)\n", s.Node, MaxGPUs)
		}
		over := "never"
		if s.OverSeconds > 0 {
			over = units.FormatDuration(time.Duration(s.OverSeconds) * time.Second)
		}
		fmt.Fprintf(w, "  Over its slice: %s; warned %s, killed %s\n", over, times(s.Warnings), times(s.Kills))
		if len(s.Series) > 1 {
			fmt.Fprintf(w, "  Memory over %s (highest in each of %d equal parts of the run):\n",
				units.FormatDuration(time.Duration(s.Seconds)*time.Second), len(s.Series))
			var top int64
			for _, g := range s.GPUs {
				top += g.SliceMiB
			}
			for _, l := range Chart(s.Series, top, 4) {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "GPU Memory Efficiency: %s of %s (peak of what the job was given)\n", pct(peak, slice), units.GiB(slice))
	if mib, ok := Fit(j.Sums); ok {
		fmt.Fprintf(w, "Would have fit in: --gres=gpu:mem:%s per GPU (its peak, rounded up to whole GiB; ask a little more if its input varies)\n", units.FormatSize(mib))
	}
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// Chart draws series as rows columns of '#' (used) and '.' (not), one column a point,
// scaled to top (the slice: a full column is the whole slice; a point above it fills
// its column and is marked '!' on top), highest row first, each row labelled on the
// left with the size it stands for.
func Chart(series []int64, top int64, rows int) []string {
	if top <= 0 {
		for _, v := range series {
			top = max(top, v)
		}
	}
	if top <= 0 || rows <= 0 {
		return nil
	}
	label := func(mib int64) string { return fmt.Sprintf("%9s |", units.GiB(mib)) }
	out := make([]string, 0, rows)
	for r := rows; r >= 1; r-- {
		floor := top * int64(r-1) / int64(rows) // a point above floor reaches this row
		var b strings.Builder
		b.WriteString(label(top * int64(r) / int64(rows)))
		for _, v := range series {
			switch {
			case r == rows && v > top:
				b.WriteByte('!')
			case v > floor:
				b.WriteByte('#')
			default:
				b.WriteByte('.')
			}
		}
		out = append(out, b.String())
	}
	return out
}
