// Package units is gpumem's one grammar for GPU memory sizes and durations, and its one
// way of writing sizes for people: the request language, gpumem.conf, every flag of
// gpumemd and gpumemctl, and every message read and write them here, so "1.5g" or "30"
// means the same wherever it is typed. docs/request-language.md#sizes describes it.
//
// It is pure Go with no I/O and no globals beyond constant tables, and it allocates
// nothing while reading a good size: the request parser on slurmctld's submit path
// calls it.
package units

import (
	"math/bits"
	"strconv"
	"strings"
)

// MaxMiB bounds any size: 1 PiB. No GPU comes near it; the bound only stops overflow and
// typing accidents.
const MaxMiB int64 = 1 << 30

// MaxSettingMiB bounds a size in gpumem.conf or on a command line (ShardUnit, pools,
// fragmentation and target sizes): 1 TiB, more than any one GPU holds.
const MaxSettingMiB int64 = 1 << 20

// maxDecimals bounds the fraction digits of a size (1.125t is fine, 1.0000001g is not),
// which also keeps the arithmetic below inside 128 bits.
const maxDecimals = 3

// suffixes maps a lower-cased size suffix to its bytes, as Slurm's count parser reads
// them: single letters and the -ib forms are binary, the -b forms decimal. P is left
// out: the largest size is 1 PiB, so only "1p" would ever be read.
var suffixes = map[string]uint64{
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// Why a size is refused. The ones a caller may want to explain further are named.
const (
	WhyEmpty    = "is empty"
	WhyNegative = "is negative"
	WhyZero     = "is zero"
	WhyNoUnit   = "has no unit (k, m, g, t, kib..tib, kb..tb)"
)

// SizeError is a size that cannot be read: the size as typed, and why.
type SizeError struct {
	Token string
	Why   string
}

func (e *SizeError) Error() string { return "size " + strconv.Quote(e.Token) + " " + e.Why }

// ParseMiB reads a size with its unit (20g, 20G, 20GiB, 20480m, 20gb, 1.5t) in MiB,
// rounded up so that nobody gets less than they wrote, from 1 MiB to MaxMiB. A bare
// number is refused: it means MB in --mem but GPUs in --gres.
func ParseMiB(s string) (int64, error) {
	mib, why := Read(s)
	if why != "" {
		return 0, &SizeError{Token: s, Why: why}
	}
	return mib, nil
}

// Read is ParseMiB that says why a size is refused instead of building an error (""
// when it is good), for callers that word their own errors; a good size allocates
// nothing.
func Read(s string) (mib int64, why string) {
	num, unit := splitSize(s)
	mult, ok := suffixes[strings.ToLower(unit)]
	switch {
	case s == "":
		return 0, WhyEmpty
	case strings.HasPrefix(s, "-"):
		return 0, WhyNegative
	case num == "":
		return 0, "has no number"
	case isZero(num):
		// Before the unit: "gpu:mem:0" is a zero, whatever unit was left off.
		return 0, WhyZero
	case unit == "":
		return 0, WhyNoUnit
	case !ok:
		return 0, "has unknown unit " + strconv.Quote(unit) + " (want k, m, g, t, kib..tib, kb..tb)"
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" || strings.Count(num, ".") > 1 || (strings.Contains(num, ".") && frac == "") {
		return 0, "is not a number"
	}
	if len(frac) > maxDecimals {
		return 0, "has more than 3 decimals"
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > uint64(MaxMiB)<<20/mult {
		return 0, "is larger than 1024t"
	}
	// value = (w*10^f + frac) / 10^f units; MiB = ceil(value*mult / 2^20), in 128 bits.
	scale := uint64(1)
	for range frac {
		scale *= 10
	}
	f, _ := strconv.ParseUint("0"+frac, 10, 64)
	hi, lo := bits.Mul64(w*scale+f, mult)
	den := scale << 20
	q, r := bits.Div64(hi, lo, den)
	if r != 0 {
		q++
	}
	switch {
	case hi == 0 && lo < den:
		return 0, "is below 1 MiB"
	case q > uint64(MaxMiB):
		return 0, "is larger than 1024t"
	}
	return int64(q), ""
}

// isZero reports a well-formed number whose every digit is 0: 0, 00, 0.0.
func isZero(num string) bool {
	return strings.Count(num, ".") <= 1 && strings.Contains(num, "0") && strings.Trim(num, "0.") == ""
}

func splitSize(s string) (num, unit string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}
