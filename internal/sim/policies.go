package sim

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/internal/placement"
)

// Policies are the policy names a table can hold, in the order tables show them.
var Policies = []string{"random", "first-fit", "best-fit", "gpu-packing", "fgd", placement.OursName}

// NewPolicy makes the named policy for a target workload; seed fixes its tie-breaks.
// Policies are stateful (caches, random draws): one per run.
func NewPolicy(name string, shapes []placement.Shape, seed int64) (placement.Policy, error) {
	s := uint64(seed)
	switch name {
	case "random":
		return placement.NewRandom(s), nil
	case "first-fit":
		return placement.FirstFit{}, nil
	case "best-fit":
		return newBestFit()
	case "gpu-packing":
		return placement.NewGPUPacking(s), nil
	case "fgd":
		return placement.NewFGD(shapes, s), nil
	case placement.OursName:
		return placement.NewOurs(shapes), nil
	}
	return nil, fmt.Errorf("unknown policy %q, want one of %s or all", name, strings.Join(Policies, ", "))
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
		if _, err := NewPolicy(name, nil, 0); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}
