// Package sim replays a GPU-sharing workload against a cluster with a placement policy,
// following the protocol of Weng et al. (USENIX ATC 2023): the workload's tasks plus
// draws from it up to a multiple of the cluster's GPU capacity arrive one by one in a
// seeded order, nothing departs, and each task is placed or dropped.
package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/gpumem/gpumem/internal/trace"
)

// Arrivals is the arrival order of one run, as the published simulator makes it (its
// seed-42 sequence shows it): every task of the workload once, shuffled, and after them
// tasks drawn uniformly with replacement, in the order drawn, until the next draw would
// take the GPU demand past tune x capacity (milli-GPU). Like the simulator, the stop
// test counts the next draw's per-GPU share, while the total counts all its GPUs. The
// seed fixes draws and order.
func Arrivals(pods []trace.Pod, capacity int64, tune float64, seed int64) ([]trace.Pod, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("sim: empty workload, want at least one task")
	}
	if tune <= 0 {
		return nil, fmt.Errorf("sim: tune %g, want a positive multiple of capacity such as 1.3", tune)
	}
	limit := int64(tune * float64(capacity))
	var total int64
	out := make([]trace.Pod, len(pods), len(pods)*2)
	copy(out, pods)
	for i := range pods {
		total += pods[i].GPUDemand()
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if anyGPU(pods) {
		for {
			p := pods[rng.IntN(len(pods))]
			if total+p.GPUMilli > limit {
				break
			}
			total += p.GPUDemand()
			out = append(out, p)
		}
	}
	return out, nil
}

// anyGPU guards the draws: a workload without GPU demand would never reach the limit.
func anyGPU(pods []trace.Pod) bool {
	for i := range pods {
		if pods[i].GPUDemand() > 0 {
			return true
		}
	}
	return false
}
