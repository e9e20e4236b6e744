package sim

import (
	"strings"

	"github.com/gpumem/gpumem/internal/trace"
)

// paperPolicies maps the published simulator's policy names to ours.
var paperPolicies = map[string]string{
	"01-Random": "random", "04-GpuPacking": "gpu-packing", "05-BestFit": "best-fit", "06-FGD": "fgd",
}

// Published is the published unallocated share at the end, mean over the seeds given,
// by workload (short name, e.g. "default") and policy (our name). Policies the
// published runs have and we do not implement are left out.
func Published(curves []trace.Curve) map[string]map[string]float64 {
	sum := map[string]map[string]float64{}
	count := map[string]map[string]int{}
	for _, c := range curves {
		p, ok := paperPolicies[c.Policy]
		if !ok {
			continue
		}
		w := strings.TrimPrefix(c.Workload, "openb_pod_list_")
		if sum[w] == nil {
			sum[w], count[w] = map[string]float64{}, map[string]int{}
		}
		sum[w][p] += 100 - c.Final()
		count[w][p]++
	}
	for w, ps := range sum {
		for p := range ps {
			ps[p] /= float64(count[w][p])
		}
	}
	return sum
}

// PublishedCurves is the published allocation curve (% at k% arrived), mean over the
// seeds given, by workload (short name) and policy (our name), to draw beside ours.
func PublishedCurves(curves []trace.Curve) map[string]map[string][]float64 {
	sum := map[string]map[string][]float64{}
	count := map[string]map[string]int{}
	for _, c := range curves {
		p, ok := paperPolicies[c.Policy]
		if !ok || len(c.Alloc) == 0 {
			continue
		}
		w := strings.TrimPrefix(c.Workload, "openb_pod_list_")
		if sum[w] == nil {
			sum[w], count[w] = map[string][]float64{}, map[string]int{}
		}
		acc := sum[w][p]
		if acc == nil {
			acc = make([]float64, len(c.Alloc))
		}
		for k := range min(len(acc), len(c.Alloc)) {
			acc[k] += c.Alloc[k]
		}
		sum[w][p], count[w][p] = acc[:min(len(acc), len(c.Alloc))], count[w][p]+1
	}
	for w, ps := range sum {
		for p, acc := range ps {
			for k := range acc {
				acc[k] /= float64(count[w][p])
			}
		}
	}
	return sum
}
