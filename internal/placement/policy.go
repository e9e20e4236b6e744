package placement

import "fmt"

// ByName returns the policy called name. seed feeds the policies that draw random numbers,
// so a replay is repeatable.
func ByName(name string, seed int64) (Policy, error) {
	switch name {
	case "first-fit":
		return FirstFit{}, nil
	case "best-fit":
		return BestFit{}, nil
	case "spread":
		return Spread{}, nil
	}
	return nil, fmt.Errorf("unknown placement policy %q; known: %s", name, "first-fit, best-fit, spread")
}
