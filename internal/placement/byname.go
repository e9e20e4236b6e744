package placement

import (
	"fmt"
	"strings"
)

// names are the policies ByName makes, for its error message.
var names = []string{"first-fit", "best-fit", "spread", "random", "gpu-packing", "fgd", OursName}

// Names lists the policies ByName makes (shell completion, help).
func Names() []string { return append([]string(nil), names...) }

// ByName returns the policy called name. seed feeds the policies that draw random numbers
// (random, gpu-packing, fgd's ties among idle nodes), so a replay is repeatable. target is
// the workload the fragmentation-aware policies (fgd, gpumem) keep room for, as
// TargetShapes gives it (in production ShapesOfSizes, from the sizes a site's jobs ask);
// they refuse to be made without one. fgd looks at CPU and GPU only, as published, so it
// ignores the shapes' host memory; gpumem counts it.
//
// Policies made here may keep state between calls (caches, random draws, the order nodes
// were opened in): one value per State, not for concurrent use.
func ByName(name string, seed int64, target ...Shape) (Policy, error) {
	switch name {
	case "first-fit":
		return FirstFit{}, nil
	case "best-fit":
		return BestFit{}, nil
	case "spread":
		return Spread{}, nil
	case "random":
		return NewRandom(uint64(seed)), nil
	case "gpu-packing":
		return NewGPUPacking(uint64(seed)), nil
	case "fgd", OursName:
		if len(target) == 0 {
			return nil, fmt.Errorf("placement policy %q needs the target workload's shapes (e.g. the request sizes jobs typically ask); none given", name)
		}
		if name == "fgd" {
			return NewFGD(withoutMemory(target), uint64(seed)), nil
		}
		return NewOurs(target), nil
	}
	return nil, fmt.Errorf("unknown placement policy %q; known: %s", name, strings.Join(names, ", "))
}

// NeedsTarget reports whether ByName needs target shapes for the named policy.
func NeedsTarget(name string) bool { return name == "fgd" || name == OursName }

func withoutMemory(shapes []Shape) []Shape {
	out := make([]Shape, len(shapes))
	for i, m := range shapes {
		m.Mem = 0
		out[i] = m
	}
	return out
}
