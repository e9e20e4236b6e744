package units

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// AboveZero as the lower bound of DurationIn refuses 0 and nothing above it: the
// refusal reads "above 0s".
const AboveZero = time.Nanosecond

// ParseDuration reads a duration as every gpumem.conf key and gpumemd flag takes it: a
// Go duration (90s, 5m, 1h30m, 168h) or a bare whole number of seconds (30), as Slurm
// writes its own intervals.
func ParseDuration(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -maxSeconds || n > maxSeconds {
		return 0, errors.New("not a duration")
	}
	return time.Duration(n) * time.Second, nil
}

// DurationGrammar says what ParseDuration takes, for a refusal: "want " + DurationGrammar.
const DurationGrammar = "a duration with its unit such as 30s, 10m or 1h, or a whole number of seconds"

// FormatFlagDuration is how a duration flag shows its default, as pflag's own duration
// flags did (90s as 1m30s, a week as 168h0m0s), but 0 as "0": pflag then shows no
// default at all.
func FormatFlagDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}

// maxSeconds keeps a bare number of seconds inside time.Duration.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// DurationIn is the one check of a duration setting: ParseDuration within [lo, hi]. A
// value that is no duration is told the grammar; one out of range, the range.
func DurationIn(v string, lo, hi time.Duration) (time.Duration, error) {
	d, err := ParseDuration(v)
	if err != nil {
		return 0, errors.New("want " + DurationGrammar + "; " + span(lo, hi))
	}
	if d < lo || d > hi {
		return 0, errors.New("want a duration " + span(lo, hi))
	}
	return d, nil
}

func span(lo, hi time.Duration) string {
	if lo == AboveZero {
		return "above 0s and at most " + FormatDuration(hi)
	}
	return "from " + FormatDuration(lo) + " to " + FormatDuration(hi)
}

// FormatDuration is time.Duration's String without the zero minutes and seconds that
// follow whole hours or minutes: 1h, 24h, 1m, 1h30m, 90s stays 1m30s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if d != 0 && d%time.Minute == 0 {
		s = strings.TrimSuffix(s, "0s")
		if d%time.Hour == 0 {
			s = strings.TrimSuffix(s, "0m")
		}
	}
	return s
}
