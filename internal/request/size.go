package request

import (
	"math/bits"
	"strconv"
	"strings"
)

// MaxMiB bounds a size: 1 PiB. No GPU comes near it; the bound only stops overflow and
// typing accidents, and admission answers anything realistic with a reason.
const MaxMiB int64 = 1 << 30

// maxDecimals bounds the fraction digits of a size (1.125t is fine, 1.0000001g is not),
// which also keeps the arithmetic below inside 128 bits.
const maxDecimals = 3

// suffixes maps a lower-cased size suffix to its bytes, as Slurm's count parser reads
// them: single letters and the -ib forms are binary, the -b forms decimal.
var suffixes = map[string]uint64{
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize reads a GPU memory size such as 20g, 20G, 20GiB, 20480m, 20gb or 1.5t and
// returns it in MiB, rounded up: a job never gets less memory than it asked for. A unit is
// required, because a bare number means MB in --mem but GPUs in --gres.
func ParseSize(s string) (int64, error) {
	num, unit := splitSize(s)
	mult, ok := suffixes[strings.ToLower(unit)]
	switch {
	case s == "":
		return 0, &SizeError{Token: s, Why: "is empty"}
	case strings.HasPrefix(s, "-"):
		return 0, &SizeError{Token: s, Why: "is negative" + atLeast}
	case num == "":
		return 0, &SizeError{Token: s, Why: "has no number"}
	case isZero(num):
		// Before the unit: "gpu:mem:0" is a zero, whatever unit was left off.
		return 0, &SizeError{Token: s, Why: "is zero" + atLeast}
	case unit == "":
		return 0, &SizeError{Token: s, Why: "has no unit (k, m, g, t, kib..tib, kb..tb)"}
	case !ok:
		return 0, &SizeError{Token: s, Why: "has unknown unit " + strconv.Quote(unit) + " (want k, m, g, t, kib..tib, kb..tb)"}
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" || strings.Count(num, ".") > 1 || (strings.Contains(num, ".") && frac == "") {
		return 0, &SizeError{Token: s, Why: "is not a number"}
	}
	if len(frac) > maxDecimals {
		return 0, &SizeError{Token: s, Why: "has more than 3 decimals"}
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > uint64(MaxMiB)<<20/mult {
		return 0, &SizeError{Token: s, Why: "is larger than 1024t"}
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
		return 0, &SizeError{Token: s, Why: "is below 1 MiB"}
	case q > uint64(MaxMiB):
		return 0, &SizeError{Token: s, Why: "is larger than 1024t"}
	}
	return int64(q), nil
}

// atLeast follows a zero or negative size: what the smallest request is.
const atLeast = ": GPU memory is asked for as a positive size, at least 1m (1 MiB)"

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

// FormatSize writes MiB in the shortest exact form ParseSize reads back: 20g, 1536m.
func FormatSize(mib int64) string { return string(AppendSize(nil, mib)) }

// AppendSize appends FormatSize(mib) to b.
func AppendSize(b []byte, mib int64) []byte {
	switch {
	case mib > 0 && mib%(1<<20) == 0:
		return append(strconv.AppendInt(b, mib>>20, 10), 't')
	case mib > 0 && mib%(1<<10) == 0:
		return append(strconv.AppendInt(b, mib>>10, 10), 'g')
	}
	return append(strconv.AppendInt(b, mib, 10), 'm')
}

// GiB writes MiB for people: whole GiB when exact, else one decimal, rounded down so that
// a capacity is never overstated.
func GiB(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + " GiB"
	}
	return strconv.FormatFloat(float64(mib*10/1024)/10, 'f', 1, 64) + " GiB"
}
