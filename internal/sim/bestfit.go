package sim

import "github.com/gpumem/gpumem/internal/placement"

// newBestFit is the core's best-fit policy, which lives beside first-fit in the
// placement package.
func newBestFit() (placement.Policy, error) { return placement.BestFit{}, nil }
