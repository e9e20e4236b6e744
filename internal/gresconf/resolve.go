package gresconf

import (
	"errors"
	"fmt"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// ResolveRelease reads a --slurm-version value: a release such as 22.05.8, or "auto"
// for what slurmd -V says, which is a current release where slurmd is not installed
// (nothing on the node could read an older form then).
func ResolveRelease(v string) (slurmrel.Version, error) {
	if v != "auto" {
		rel, err := slurmrel.ParseVersion(v)
		if err != nil {
			return rel, fmt.Errorf("--slurm-version %q: %w (or auto to ask slurmd -V)", v, err)
		}
		return rel, nil
	}
	rel, err := DetectRelease("")
	if errors.Is(err, ErrNoSlurmd) {
		return slurmrel.Version{}, nil
	}
	if err != nil {
		return rel, fmt.Errorf("--slurm-version auto: %w; name the release instead", err)
	}
	return rel, nil
}
