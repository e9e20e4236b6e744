package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// palette gives each policy a colour that stays the same across panels; ours is drawn
// last and thickest so it reads first.
var palette = map[string]string{
	"random": "#9e9e9e", "first-fit": "#8d6e63", "best-fit": "#1e88e5",
	"gpu-packing": "#8e24aa", "fgd": "#fb8c00", "gpumem": "#2e7d32",
}

const (
	panelW, panelH = 360, 250
	plotL, plotR   = 48, 12 // margins inside a panel
	plotT, plotB   = 28, 36
	fromPct        = 60 // the curves only part before this share arrived
)

// WriteSVG draws one panel per workload: GPU allocation (%) against demand arrived (% of
// capacity), from fromPct on, where the policies part; the legend gives each policy's
// unallocated share at the end. Summaries must come as Summarize orders them. published
// (PublishedCurves; nil for none) adds the published runs' mean curves, dashed in the
// policy's colour, for the workloads and policies drawn.
func WriteSVG(w io.Writer, sums []Summary, published map[string]map[string][]float64) error {
	var workloads []string
	byWorkload := map[string][]Summary{}
	for _, s := range sums {
		if len(s.Curve) == 0 {
			continue // the offline reference and the bound have no curve
		}
		if _, ok := byWorkload[s.Workload]; !ok {
			workloads = append(workloads, s.Workload)
		}
		byWorkload[s.Workload] = append(byWorkload[s.Workload], s)
	}
	title := "GPU allocation vs demand arrived (mean of seeds; legend: unallocated at the end)"
	if len(published) > 0 {
		title = "GPU allocation vs demand arrived (mean of seeds; dashed: published runs)"
	}
	return panels(w, title, len(workloads),
		func(b *strings.Builder, i, x0, y0 int) {
			panel(b, byWorkload[workloads[i]], published[workloads[i]], x0, y0)
		})
}

// panels lays out n panels, three to a row, under a title; draw fills panel i at x0, y0.
func panels(w io.Writer, title string, n int, draw func(b *strings.Builder, i, x0, y0 int)) error {
	if n == 0 {
		return fmt.Errorf("sim: nothing to plot")
	}
	cols := min(3, n)
	rows := (n + cols - 1) / cols
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", cols*panelW, rows*panelH+24)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="8" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i := range n {
		draw(&b, i, (i%cols)*panelW, 24+(i/cols)*panelH)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func panel(b *strings.Builder, sums []Summary, published map[string][]float64, x0, y0 int) {
	last := len(sums[0].Curve) - 1
	lo, hi := 100.0, 0.0
	for _, s := range sums {
		for k := fromPct; k <= last && k < len(s.Curve); k++ {
			lo, hi = math.Min(lo, s.Curve[k]), math.Max(hi, s.Curve[k])
		}
	}
	lo, hi = math.Floor(lo/5)*5, math.Min(100, math.Ceil(hi/5)*5+1)
	w, h := float64(panelW-plotL-plotR), float64(panelH-plotT-plotB)
	px := func(k int) float64 { return float64(x0+plotL) + w*float64(k-fromPct)/float64(max(last-fromPct, 1)) }
	py := func(v float64) float64 { return float64(y0+plotT) + h*(hi-v)/math.Max(hi-lo, 1) }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0+plotL, y0+plotT-10, html.EscapeString(sums[0].Workload))
	for v := lo; v <= hi; v += 5 {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n",
			px(fromPct), px(last), py(v), py(v), x0+plotL-4, py(v)+4, v)
	}
	for k := fromPct; k <= last; k += 10 {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%.1f" y="%.1f" text-anchor="middle">%d%%</text>`+"\n",
			px(k), px(k), py(hi), py(lo), px(k), py(lo)+14, k)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#616161">demand arrived (%% of GPU capacity)</text>`+"\n", px((fromPct+last)/2), y0+panelH-6)
	for i, s := range sums {
		colour, width := stroke(s.Policy)
		var pts []string
		for k := fromPct; k <= last && k < len(s.Curve); k++ {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(k), py(s.Curve[k])))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", colour, width, strings.Join(pts, " "))
		ly := float64(y0+plotT) + h - 12*float64(len(sums)-i)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/><text x="%.1f" y="%.1f">%s %.2f%%</text>`+"\n",
			px(fromPct)+w*0.55, px(fromPct)+w*0.62, ly-4, ly-4, colour, width, px(fromPct)+w*0.64, ly, html.EscapeString(s.Policy), s.Unallocated)
	}
	// Drawn last, thin and dashed, so that where ours and the published runs agree
	// both show.
	for _, s := range sums {
		pub := published[s.Policy]
		if len(pub) == 0 {
			continue
		}
		colour, _ := stroke(s.Policy)
		var pts []string
		for k := fromPct; k <= last && k < len(pub); k++ {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(k), py(math.Max(lo, math.Min(hi, pub[k])))))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1" stroke-dasharray="4 3" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
	}
}

// stroke is a policy's line colour and width: ours thickest, unknown names black.
func stroke(policy string) (string, float64) {
	colour, width := palette[policy], 1.5
	if colour == "" {
		colour = "#000000"
	}
	if policy == "gpumem" {
		width = 2.5
	}
	return colour, width
}
