package slurmrel

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Version is a Slurm version, major.minor.micro as `slurmd -V` prints it.
type Version struct{ Major, Minor, Micro int }

// ParseVersion reads "22.05.8", "slurm 24.11.5" or "slurm-wlm 22.05.8" (the forms
// `slurmd -V` prints); the micro part may be left out.
func ParseVersion(s string) (Version, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Version{}, fmt.Errorf("slurm release %q: want a version such as 22.05.8 or 24.11", s)
	}
	v := f[len(f)-1]
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("slurm release %q: want a version such as 22.05.8 or 24.11", s)
	}
	var n [3]int
	for i, p := range parts {
		// Pre-releases such as 24.11.0-0rc1 count as their micro version.
		p, _, _ = strings.Cut(p, "-")
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || x > 255 {
			return Version{}, fmt.Errorf("slurm release %q: %q is not a number from 0 to 255; want a version such as 22.05.8", s, parts[i])
		}
		n[i] = x
	}
	return Version{n[0], n[1], n[2]}, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%02d.%d", v.Major, v.Minor, v.Micro) }

// Compare orders versions: -1, 0 or +1.
func (v Version) Compare(o Version) int {
	if c := cmp.Compare(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, o.Minor); c != 0 {
		return c
	}
	return cmp.Compare(v.Micro, o.Micro)
}

// Before says whether v is an earlier release than o.
func (v Version) Before(o Version) bool { return v.Compare(o) < 0 }

// V is the version major.minor.micro.
func V(major, minor, micro int) Version { return Version{major, minor, micro} }
