package sim

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
)

// Summary is one workload x policy over its seeds.
type Summary struct {
	Workload    string    `json:"workload"`
	Policy      string    `json:"policy"`
	Seeds       int       `json:"seeds"`
	Unallocated float64   `json:"unallocated_pct"`    // mean over seeds
	StdDev      float64   `json:"unallocated_stddev"` // across seeds
	FragRatio   float64   `json:"frag_ratio_pct"`     // mean over seeds
	Failed      float64   `json:"failed_tasks"`       // mean over seeds
	WallMS      float64   `json:"wall_ms"`            // mean over seeds
	Curve       []float64 `json:"alloc_curve_pct"`    // mean allocation % at k% arrived
}

// Summarize folds results (ordered workload, policy, seed, as Run returns them) into
// one summary per workload x policy.
func Summarize(results []Result) []Summary {
	var out []Summary
	for i := 0; i < len(results); {
		j := i
		for j < len(results) && results[j].Workload == results[i].Workload && results[j].Policy == results[i].Policy {
			j++
		}
		out = append(out, summarize(results[i:j]))
		i = j
	}
	return out
}

func summarize(rs []Result) Summary {
	s := Summary{Workload: rs[0].Workload, Policy: rs[0].Policy, Seeds: len(rs), Curve: make([]float64, len(rs[0].Curve))}
	n := float64(len(rs))
	for _, r := range rs {
		s.Unallocated += r.Unallocated() / n
		s.FragRatio += r.FragRatio / n
		s.Failed += float64(r.Failed) / n
		s.WallMS += float64(r.Wall.Microseconds()) / 1000 / n
		for k, v := range r.Curve {
			s.Curve[k] += v / n
		}
	}
	for _, r := range rs {
		d := r.Unallocated() - s.Unallocated
		s.StdDev += d * d / n
	}
	s.StdDev = math.Sqrt(s.StdDev)
	return s
}

// WriteCurveCSV writes one row per run: workload, policy, seed, then the allocation % at
// each whole percent arrived, in the layout of the published curves.
func WriteCurveCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	if len(results) == 0 {
		cw.Flush()
		return cw.Error()
	}
	head := []string{"workload", "policy", "seed", "unallocated_pct"}
	for k := range results[0].Curve {
		head = append(head, strconv.Itoa(k))
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range results {
		row := []string{r.Workload, r.Policy, strconv.FormatInt(r.Seed, 10), fmtPct(r.Unallocated())}
		for _, v := range r.Curve {
			row = append(row, fmtPct(v))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func fmtPct(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
