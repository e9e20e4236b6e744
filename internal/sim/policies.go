package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// Policies are the policy names a table can hold, in the order tables show them.
var Policies = []string{"random", "first-fit", "best-fit", "gpu-packing", "fgd", placement.OursName}

// Target is the workload a policy expects, as the shapes of its tasks: FGD's, and ours,
// which also count host memory (placement.ByName strips memory for FGD).
type Target struct {
	Shapes, WithMemory []placement.Shape
}

// NewTarget derives a target from a workload; coverage is the share of tasks whose
// shapes are kept (the paper keeps 95%).
func NewTarget(pods []trace.Pod, coverage float64) *Target {
	ds := make([]placement.Demand, len(pods))
	for i := range pods {
		ds[i] = pods[i].Demand()
	}
	shapes := placement.TargetShapes(ds, coverage)
	return &Target{Shapes: shapes, WithMemory: placement.WithMemory(shapes, ds)}
}

// NewPolicy makes the named policy for a target workload; seed fixes its tie-breaks.
// Policies are stateful (caches, random draws): one per run.
func NewPolicy(name string, target *Target, seed int64) (placement.Policy, error) {
	if err := known(name); err != nil {
		return nil, err
	}
	if target == nil {
		target = &Target{}
	}
	return placement.ByName(name, seed, target.WithMemory...)
}

// ParsePolicies expands a comma-separated list, where "all" means every policy.
func ParsePolicies(list string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "all" {
			out = append(out, Policies...)
			continue
		}
		if err := known(name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

func known(name string) error {
	if !slices.Contains(Policies, name) {
		return fmt.Errorf("unknown policy %q, want one of %s or all", name, strings.Join(Policies, ", "))
	}
	return nil
}
