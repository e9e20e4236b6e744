package units

import (
	"errors"
	"fmt"
	"strings"
)

// Bare says what a number written without a unit means where a size is set.
type Bare bool

const (
	// BareMiB reads a bare number as MiB, as Slurm reads --mem and its own sizes:
	// gpumem.conf, and gpumemd's flags, which set the same keys.
	BareMiB Bare = true
	// UnitRequired refuses a bare number, as the request language does (gpu:mem:20 is
	// ambiguous): gpumemctl's flags and arguments, which read like requests.
	UnitRequired Bare = false
)

// What a setting accepts, for its refusal.
const (
	sizeWant     = "want a size from 1MiB to 1TiB such as 1GiB or 512MiB"
	sizeWithUnit = "want a size with its unit such as 20g, 20GiB or 512MiB (units K, M, G, T; KiB..TiB; KB..TB), from 1MiB to 1TiB"
)

// Setting reads one size set in gpumem.conf or on a command line: the request grammar
// (ParseMiB), a bare number as bare says, from 1 MiB to MaxSettingMiB.
func Setting(v string, bare Bare) (int64, error) {
	s := strings.TrimSpace(v)
	if s != "" && strings.Trim(s, "0123456789") == "" {
		if !bare {
			return 0, errors.New(sizeWithUnit + "; a bare number is not accepted")
		}
		s += "m"
	}
	mib, why := Read(s)
	switch {
	case why == "" && mib <= MaxSettingMiB:
		return mib, nil
	case bare == BareMiB:
		return 0, errors.New(sizeWant + " (a bare number is MiB)")
	}
	return 0, errors.New(sizeWithUnit)
}

// Settings reads a comma-separated list of sizes (10G,20G,40G), each as Setting does;
// the refusal names the size that is wrong.
func Settings(v string, bare Bare) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(v, ",") {
		n, err := Setting(f, bare)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", strings.TrimSpace(f), err)
		}
		out = append(out, n)
	}
	return out, nil
}

// WholeGiB reads a size with its unit (60g, 1t, 512GiB) that is a whole number of GiB,
// up to MaxMiB, in GiB: an account's quota, which is counted in GiB.
func WholeGiB(s string) (int64, error) {
	if strings.Trim(s, "0123456789") == "" {
		return 0, fmt.Errorf("%s has no unit: write it as %sg (GiB)", s, s)
	}
	mib, err := ParseMiB(s)
	if err != nil {
		return 0, err
	}
	if mib%1024 != 0 {
		return 0, fmt.Errorf("%s is not a whole number of GiB", s)
	}
	return mib / 1024, nil
}
