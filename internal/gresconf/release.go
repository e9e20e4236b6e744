package gresconf

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Release is a Slurm version, major.minor.micro as `slurmd -V` prints it.
type Release struct{ Major, Minor, Micro int }

// ParseRelease reads "22.05.8", "slurm 24.11.5" or "slurm-wlm 22.05.8" (the forms
// `slurmd -V` prints); the micro part may be left out.
func ParseRelease(s string) (Release, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Release{}, fmt.Errorf("slurm release %q: want a version such as 22.05.8 or 24.11", s)
	}
	v := f[len(f)-1]
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Release{}, fmt.Errorf("slurm release %q: want a version such as 22.05.8 or 24.11", s)
	}
	var n [3]int
	for i, p := range parts {
		// Pre-releases such as 24.11.0-0rc1 count as their micro version.
		p, _, _ = strings.Cut(p, "-")
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return Release{}, fmt.Errorf("slurm release %q: %q is not a number; want a version such as 22.05.8", s, parts[i])
		}
		n[i] = x
	}
	return Release{n[0], n[1], n[2]}, nil
}

func (r Release) String() string { return fmt.Sprintf("%d.%02d.%d", r.Major, r.Minor, r.Micro) }

func (r Release) before(o Release) bool {
	if r.Major != o.Major {
		return r.Major < o.Major
	}
	if r.Minor != o.Minor {
		return r.Minor < o.Minor
	}
	return r.Micro < o.Micro
}

// multipleFilesFixed is the first release whose gres/shard and gres/mps leave a
// MultipleFiles record whole (SchedMD bug 17482). Before it, those plugins split every
// gpu record into one record per device file on every node, so a MIG instance written
// as MultipleFiles=/dev/nvidia0,capG,capC reaches slurmctld as three one-count GPUs;
// slurmctld keeps only as many device bits as slurm.conf counts, in record order, and
// the later MIG types end up with none (a job then gets `gpu:TYPE:0(IDX:)`).
var multipleFilesFixed = Release{23, 2, 7}

// SplitsMultipleFiles says whether this release breaks MultipleFiles records apart.
// The zero Release stands for a current Slurm, which does not.
func (r Release) SplitsMultipleFiles() bool {
	return r != (Release{}) && r.before(multipleFilesFixed)
}

// DetectRelease asks slurmd (bin, or slurmd in PATH) for its version. ErrNoSlurmd
// means none is installed.
func DetectRelease(bin string) (Release, error) {
	v, err := slurmcli.Slurmd{Path: bin}.Version(context.Background())
	if err != nil {
		return Release{}, err
	}
	return ParseRelease(v)
}

// typedShardsChecked is the first release per-GPU shard types were checked to work on
// (the 24.11 lab). On 22.05 they do not: once a node's jobs use shards of two types,
// slurmctld starts further shard jobs there with no shards at all (GRES=(null), or
// shard:TYPE:0(IDX:)), as if they had asked none; the releases between were not checked.
var typedShardsChecked = Release{24, 11, 0}

// TypedShardsWork says whether this release was checked to place jobs on per-GPU shard
// types (Options.ShardTypes) correctly. The zero Release stands for a current Slurm.
func (r Release) TypedShardsWork() bool {
	return r == (Release{}) || !r.before(typedShardsChecked)
}
