package migapply

import "time"

// MaxRetryAfter is the longest wait between two tries of a failed apply.
const MaxRetryAfter = 30 * time.Minute

// RetryAfter is how long gpumemd waits before it tries a failed apply again, after
// failures in a row: a failure a person must fix (slurm.conf, a device) is not retried,
// drained again and logged every gres interval, yet a passing one (slurmctld
// restarting) is soon retried. It doubles from first (gpumem.conf's [mig] RetryAfter,
// 30 seconds by default) up to MaxRetryAfter.
func RetryAfter(first time.Duration, failures int) time.Duration {
	d := first
	for i := 1; i < failures && d < MaxRetryAfter; i++ {
		d *= 2
	}
	return min(d, MaxRetryAfter)
}
