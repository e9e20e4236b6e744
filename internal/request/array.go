package request

import (
	"fmt"
	"strconv"
	"strings"
)

// maxArrayTasks bounds the tasks counted from --array; Slurm's own MaxArraySize is far
// below it, so a larger count is a typing accident, and the bound keeps counting cheap.
const maxArrayTasks = 1 << 24

// ArrayTasks reads --array as Slurm holds it ("0-9", "1,3,5-7", "0-15:4", any of them
// with "%N") and returns how many of its tasks may run at once: the task count, or the
// throttle N when it is lower.
func ArrayTasks(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("--array=%s %s; e.g. --array=0-9 or --array=0-99%%10", s, why)
	}
	spec, throttle, throttled := strings.Cut(s, "%")
	var n int64
	for _, part := range strings.Split(spec, ",") {
		rng, step, stepped := strings.Cut(part, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil || a < 0 {
			return bad("has " + strconv.Quote(part) + ", which is not an index or a range like 0-9")
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return bad("has " + strconv.Quote(part) + ", which is not a range like 0-9")
			}
		}
		by := int64(1)
		if stepped {
			if by, err = strconv.ParseInt(step, 10, 64); err != nil || by < 1 {
				return bad("has " + strconv.Quote(part) + ", whose step is not a positive number")
			}
		}
		if n += (b-a)/by + 1; n > maxArrayTasks {
			return bad("has more tasks than Slurm runs")
		}
	}
	if throttled {
		t, err := strconv.ParseInt(throttle, 10, 64)
		if err != nil || t < 0 {
			return bad("has a throttle that is not a number")
		}
		if t > 0 { // %0 means no limit
			n = min(n, t)
		}
	}
	return n, nil
}
