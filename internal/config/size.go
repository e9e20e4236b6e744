package config

import (
	"errors"
	"strconv"
	"strings"
)

// maxShardUnitMiB bounds ShardUnit: a unit larger than any GPU makes every GPU zero shards.
const maxShardUnitMiB = 1 << 20 // 1 TiB

// ParseMiB reads a memory size for ShardUnit: a whole number with a binary suffix
// (M/MiB, G/GiB, T/TiB, any case) or none (MiB), as Slurm reads its own sizes.
func ParseMiB(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"mib", 1}, {"gib", 1 << 10}, {"tib", 1 << 20}, {"m", 1}, {"g", 1 << 10}, {"t", 1 << 20}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > maxShardUnitMiB/mult {
		return 0, errors.New("want a size from 1MiB to 1TiB such as 1GiB or 512MiB")
	}
	return n * mult, nil
}

// ParseSizeMiB is ParseMiB for command lines, where a size takes a unit as in the
// request language (--gres=gpu:mem:20g): a bare number is refused rather than read as
// MiB, so "20" never silently means 20 MiB.
func ParseSizeMiB(v string) (int64, error) {
	s := strings.TrimSpace(v)
	if s == "" || s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		return 0, errors.New("want a size with its unit such as 20g, 20GiB or 512MiB (units M, G, T; MiB, GiB, TiB); a bare number is not accepted")
	}
	return ParseMiB(s)
}
