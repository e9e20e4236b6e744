package config

import (
	"time"

	"github.com/gpumem/gpumem/internal/units"
)

// Every size and duration in gpumem.conf is read by internal/units, the grammar the
// request language and the flags use too (docs/request-language.md#sizes): a size may be
// a bare number of MiB here, as in Slurm's own files, and a duration a bare number of
// seconds.

// parseSize reads one size (ShardUnit, a pool's bounds).
func parseSize(v string) (int64, error) { return units.Setting(v, units.BareMiB) }

// parseSizes reads a comma-separated list of sizes (10G,20G,40G).
func parseSizes(v string) ([]int64, error) { return units.Settings(v, units.BareMiB) }

// durationIn reads a duration within [lo, hi], for one key.
func durationIn(lo, hi time.Duration) func(string) (time.Duration, error) {
	return func(v string) (time.Duration, error) { return units.DurationIn(v, lo, hi) }
}
