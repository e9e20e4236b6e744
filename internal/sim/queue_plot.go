package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteQueueSVG draws one panel per workload: GPU allocation (%) over the submission
// span of a replay with departures, one line per policy (mean of seeds); the legend
// gives each policy's mean queue wait. Summaries must come as RunQueue orders them.
func WriteQueueSVG(w io.Writer, sums []QueueSummary) error {
	var workloads []string
	by := map[string][]QueueSummary{}
	for _, s := range sums {
		if _, ok := by[s.Workload]; !ok {
			workloads = append(workloads, s.Workload)
		}
		by[s.Workload] = append(by[s.Workload], s)
	}
	return panels(w, "GPU allocation over time with departures (mean of seeds; legend: mean queue wait)", len(workloads),
		func(b *strings.Builder, i, x0, y0 int) { queuePanel(b, by[workloads[i]], x0, y0) })
}

func queuePanel(b *strings.Builder, sums []QueueSummary, x0, y0 int) {
	n := len(sums[0].Curve)
	hi := 0.0
	for _, s := range sums {
		for _, v := range s.Curve {
			hi = math.Max(hi, v)
		}
	}
	hi = math.Min(100, math.Ceil(hi/5)*5+5)
	w, h := float64(panelW-plotL-plotR), float64(panelH-plotT-plotB)
	px := func(k int) float64 { return float64(x0+plotL) + w*float64(k)/float64(max(n-1, 1)) }
	py := func(v float64) float64 { return float64(y0+plotT) + h*(hi-v)/hi }
	hours := float64(sums[0].Span) / 3600
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0+plotL, y0+plotT-10, html.EscapeString(sums[0].Workload))
	for v := 0.0; v <= hi; v += hi / 4 {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n",
			px(0), px(n-1), py(v), py(v), x0+plotL-4, py(v)+4, v)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#616161">time, 0 to %.1f h after the first submission</text>`+"\n", px(n/2), y0+panelH-6, hours)
	for i, s := range sums {
		colour, width := stroke(s.Policy)
		pts := make([]string, len(s.Curve))
		for k, v := range s.Curve {
			pts[k] = fmt.Sprintf("%.1f,%.1f", px(k), py(v))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", colour, width, strings.Join(pts, " "))
		ly := float64(y0+plotT) + 12*float64(i+1)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/><text x="%.1f" y="%.1f">%s %.0fs</text>`+"\n",
			px(0)+w*0.55, px(0)+w*0.62, ly-4, ly-4, colour, width, px(0)+w*0.64, ly, html.EscapeString(s.Policy), s.MeanWait)
	}
}
