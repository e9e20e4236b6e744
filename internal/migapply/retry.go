package migapply

import "time"

// RetryAfter is how long gpumemd waits before it tries a failed apply again, after
// failures in a row: a failure a person must fix (slurm.conf, a device) is not retried,
// drained again and logged every gres interval, yet a passing one (slurmctld
// restarting) is soon retried. It doubles from 30 seconds up to 30 minutes.
func RetryAfter(failures int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < failures && d < 30*time.Minute; i++ {
		d *= 2
	}
	return min(d, 30*time.Minute)
}
