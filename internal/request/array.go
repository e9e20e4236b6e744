package request

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
)

// maxArrayTasks bounds the tasks counted from --array; Slurm's own MaxArraySize is far
// below it, so a larger count is a typing accident, and the bound keeps counting cheap.
const maxArrayTasks = 1 << 24

// ArrayTasks reads --array as Slurm holds it ("0-9", "1,3,5-7", "0-15:4", any of them
// with "%N") and returns how many of its tasks may run at once: the task count, or the
// throttle N when it is lower.
func ArrayTasks(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, errors.New(refusal.Array(s, why))
	}
	spec, throttle, throttled := strings.Cut(s, "%")
	var n int64
	for _, part := range strings.Split(spec, ",") {
		rng, step, stepped := strings.Cut(part, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil || a < 0 {
			return bad(refusal.ArrayNotIndex(part))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return bad(refusal.ArrayNotRange(part))
			}
		}
		by := int64(1)
		if stepped {
			if by, err = strconv.ParseInt(step, 10, 64); err != nil || by < 1 {
				return bad(refusal.ArrayBadStep(part))
			}
		}
		if n += (b-a)/by + 1; n > maxArrayTasks {
			return bad(refusal.ArrayTooMany)
		}
	}
	if throttled {
		t, err := strconv.ParseInt(throttle, 10, 64)
		if err != nil || t < 0 {
			return bad(refusal.ArrayBadThrottle)
		}
		if t > 0 { // %0 means no limit
			n = min(n, t)
		}
	}
	return n, nil
}
