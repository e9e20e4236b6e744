package sim

import (
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// Result is one run: one workload, one policy, one seed.
type Result struct {
	Workload, Policy string
	Seed             int64
	Tasks, Failed    int
	Capacity         int64     // milli-GPU of the cluster
	Arrived          int64     // milli-GPU that arrived
	Allocated        int64     // milli-GPU placed
	FragRatio        float64   // % of idle milli-GPU the target shapes cannot use, at the end
	Curve            []float64 // allocation % when k% of capacity had arrived, k = 0, 1, ...
	Wall             time.Duration
}

// Unallocated is the share of the cluster's GPU left unallocated at the end, in %.
func (r *Result) Unallocated() float64 { return 100 - r.AllocRatio() }

// AllocRatio is the share of the cluster's GPU allocated at the end, in %.
func (r *Result) AllocRatio() float64 { return 100 * float64(r.Allocated) / float64(r.Capacity) }

// Replay places the arrivals in order with p on a fresh copy of nodes. Every choice goes
// through State.Commit, so a policy that over-allocates anything makes Replay fail
// instead of inflating the figures.
func Replay(nodes []placement.Node, arrivals []trace.Pod, p placement.Policy, shapes []placement.Shape, points int) (Result, error) {
	r, _, err := ReplayPlan(nodes, arrivals, p, shapes, points)
	return r, err
}

// ReplayPlan is Replay that also returns where each arrival went (Node -1: dropped),
// the placement the offline reference starts from.
func ReplayPlan(nodes []placement.Node, arrivals []trace.Pod, p placement.Policy, shapes []placement.Shape, points int) (Result, []placement.Choice, error) {
	start := time.Now()
	plan := make([]placement.Choice, len(arrivals))
	s := placement.NewState(nodes)
	r := Result{Policy: p.Name(), Tasks: len(arrivals), Curve: make([]float64, 0, points)}
	for _, n := range nodes {
		r.Capacity += int64(len(n.Devices)) * trace.MilliPerGPU
	}
	if r.Capacity == 0 {
		return r, nil, fmt.Errorf("sim: the cluster has no GPUs")
	}
	record := func() {
		// A point per whole percent of capacity arrived, taken after the task that
		// reached it; large tasks can pass several percents at once.
		for len(r.Curve) < points && r.Arrived*100 >= int64(len(r.Curve))*r.Capacity {
			r.Curve = append(r.Curve, r.AllocRatio())
		}
	}
	record()
	for i := range arrivals {
		pod := &arrivals[i]
		d := pod.Demand()
		r.Arrived += pod.GPUDemand()
		if c, ok := p.Place(s, &d); ok {
			if err := s.Commit(c, &d); err != nil {
				return r, nil, fmt.Errorf("sim: %s placed task %d (%s) wrongly: %w", p.Name(), i, pod.Name, err)
			}
			r.Allocated += pod.GPUDemand()
			plan[i] = c
		} else {
			r.Failed++
			plan[i] = placement.Choice{Node: -1}
		}
		record()
	}
	for len(r.Curve) < points {
		r.Curve = append(r.Curve, r.AllocRatio())
	}
	if frag, idle := placement.ClusterFrag(s, shapes); idle > 0 {
		r.FragRatio = 100 * frag / float64(idle)
	}
	r.Wall = time.Since(start)
	return r, plan, nil
}
