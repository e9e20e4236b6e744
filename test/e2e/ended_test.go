//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// endsCompleted waits up to within for every component of job id (one, or each of a
// hetjob's) to end, and fails the test unless each ended COMPLETED with exit 0:0. A job
// that only left the pending queue, or that squeue no longer lists, is not one that ran.
func endsCompleted(t *testing.T, id string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := slurm(t, 30*time.Second, "", "scontrol", "show", "-o", "job", id)
		if r.code != 0 {
			t.Fatalf("job %s: slurmctld no longer knows it, so how it ended is unknown: %s", id, strings.TrimSpace(r.err))
		}
		var comps []jobEnd
		done := true
		for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
			st, ec := jobStateRE.FindStringSubmatch(l), exitCodeRE.FindStringSubmatch(l)
			if st == nil || ec == nil {
				continue
			}
			switch st[1] {
			case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
				done = false
			}
			comps = append(comps, jobEnd{st[1], ec[1]})
		}
		if len(comps) == 0 {
			t.Fatalf("job %s: no JobState in:\n%s", id, r.out)
		}
		if done {
			for i, e := range comps {
				if e.state != "COMPLETED" || e.exit != "0:0" {
					t.Errorf("job %s component %d ended %s, exit code %s; want COMPLETED 0:0", id, i, e.state, e.exit)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s has not ended %v after it started:\n%s", id, within, r.out)
		}
		time.Sleep(time.Second)
	}
}
