package placement

import (
	"fmt"
	"slices"
)

// ShapesOfSizes is a target workload where no trace of past tasks is at hand, as in
// production: one single-GPU slice per distinct size (in device units, MiB in
// production), as frequent as it occurs in sizes. Pass the per-GPU sizes jobs ask, for
// instance those pending or submitted lately, so that common sizes weigh more; a
// configured list of typical sizes works too. Whole-GPU jobs are sizes equal to a GPU's
// capacity. CPU and host memory are left out: jobs that state no CPU or memory need
// leave them out of fragmentation.
func ShapesOfSizes(sizes []int64) ([]Shape, error) {
	count := map[int64]int{}
	for _, u := range sizes {
		if u <= 0 {
			return nil, fmt.Errorf("placement: target size %d; want a positive per-GPU size in units (MiB), e.g. 20480 for 20 GiB", u)
		}
		count[u]++
	}
	if len(count) == 0 {
		return nil, fmt.Errorf("placement: no target sizes; want at least one per-GPU size in units (MiB)")
	}
	out := make([]Shape, 0, len(count))
	for u, n := range count {
		out = append(out, Shape{GPUs: 1, Units: u, Freq: float64(n) / float64(len(sizes))})
	}
	slices.SortFunc(out, func(a, b Shape) int { return int(a.Units - b.Units) })
	return out, nil
}
