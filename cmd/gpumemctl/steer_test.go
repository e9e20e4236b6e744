package main

import (
	"testing"
	"time"
)

// Passes start every --interval while a pass takes less; one that overran leaves a
// quarter interval before the next.
func TestUntilNext(t *testing.T) {
	for _, c := range []struct{ interval, took, want time.Duration }{
		{2 * time.Second, 0, 2 * time.Second},
		{2 * time.Second, 1300 * time.Millisecond, 700 * time.Millisecond},
		{2 * time.Second, 1900 * time.Millisecond, 500 * time.Millisecond},
		{2 * time.Second, 5 * time.Second, 500 * time.Millisecond},
	} {
		if got := untilNext(c.interval, c.took); got != c.want {
			t.Errorf("untilNext(%s, %s) = %s, want %s", c.interval, c.took, got, c.want)
		}
	}
}

func TestCadenceSummary(t *testing.T) {
	var c cadence
	if got := c.String(); got != "0 passes" {
		t.Errorf("no pass: %q", got)
	}
	t0 := time.Unix(1000, 0)
	c.add(t0, 300*time.Millisecond)
	if got, want := c.String(), "1 passes, one every - s, each 0.30 s on average and 0.30 s at most"; got != want {
		t.Errorf("one pass: %q, want %q", got, want)
	}
	c.add(t0.Add(2*time.Second), 500*time.Millisecond)
	c.add(t0.Add(5*time.Second), 400*time.Millisecond)
	if got, want := c.String(), "3 passes, one every 2.50 s, each 0.40 s on average and 0.50 s at most"; got != want {
		t.Errorf("three passes: %q, want %q", got, want)
	}
}
