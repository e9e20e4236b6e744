package main

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// duties is what gpumemd could not do, for its metrics: a fault it lives through (the
// port taken by another process, a history it cannot open, NVML that does not start)
// stops one duty, never the daemon, and shows here until the duty works again. It is
// shared by the poll loop and the HTTP server's goroutine.
type duties struct {
	log *slog.Logger

	mu       sync.Mutex
	down     map[string]string // duty -> the error that stops it now
	failures map[string]uint64 // duty -> failures since start
	logged   map[string]time.Time
	counts   map[string]uint64 // events worth counting: "history_set_aside", ...
}

// Duties gpumemd reports in gpumem_sidecar_duty_up, whether or not they are configured:
// a duty that is off counts as up.
var dutyNames = []string{"listen", "nvml", "history"}

func newDuties(log *slog.Logger) *duties {
	return &duties{log: log, down: map[string]string{}, failures: map[string]uint64{}, logged: map[string]time.Time{}, counts: map[string]uint64{}}
}

// fail records that duty failed with err and logs it: each time, but at most one line a
// minute while the error stays the same, with the count of failures so far.
func (u *duties) fail(duty string, err error) {
	now := time.Now()
	u.mu.Lock()
	u.failures[duty]++
	n, prev := u.failures[duty], u.down[duty]
	u.down[duty] = err.Error()
	quiet := prev == err.Error() && now.Sub(u.logged[duty]) < time.Minute
	if !quiet {
		u.logged[duty] = now
	}
	u.mu.Unlock()
	if !quiet {
		u.log.Error("gpumemd cannot "+what(duty)+"; it keeps running and retries", "duty", duty, "err", err, "failures", n)
	}
}

// mark records whether duty works (err nil) without logging: for the duties the poll
// loop already logs as its stages.
func (u *duties) mark(duty string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		delete(u.down, duty)
		return
	}
	u.failures[duty]++
	u.down[duty] = err.Error()
}

// up records that duty works, and logs it once if it had failed.
func (u *duties) up(duty string) {
	u.mu.Lock()
	prev, was := u.down[duty]
	delete(u.down, duty)
	n := u.failures[duty]
	u.mu.Unlock()
	if was {
		u.log.Info("gpumemd can "+what(duty)+" again", "duty", duty, "failures", n, "last_err", prev)
	}
}

func (u *duties) count(event string) {
	u.mu.Lock()
	u.counts[event]++
	u.mu.Unlock()
}

// snapshot is the state for one poll's metrics.
func (u *duties) snapshot() (up map[string]bool, failures, counts map[string]uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	up = map[string]bool{}
	for _, d := range dutyNames {
		_, down := u.down[d]
		up[d] = !down
	}
	return up, maps.Clone(u.failures), maps.Clone(u.counts)
}

func what(duty string) string {
	switch duty {
	case "listen":
		return "serve /metrics and /api"
	case "nvml":
		return "read NVML"
	case "history":
		return "keep the job history"
	}
	return duty
}

// backoff is the wait between retries of a duty: from one second, doubling, to at most
// 30 seconds, so a port held for hours costs two attempts (and at most two log lines)
// a minute.
type backoff struct{ next time.Duration }

const (
	backoffFirst = time.Second
	backoffMax   = 30 * time.Second
)

// wait sleeps for the next interval; false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	b.next = min(max(2*b.next, backoffFirst), backoffMax)
	t := time.NewTimer(b.next)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.next = 0 }
