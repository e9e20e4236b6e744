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
