package migapply

import (
	"testing"
	"time"
)

func TestRetryAfterBacksOff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 7: 30 * time.Minute, 50: 30 * time.Minute} {
		if got := RetryAfter(30*time.Second, n); got != want {
			t.Errorf("after %d failures: %v, want %v", n, got, want)
		}
	}
	if got := RetryAfter(2*time.Second, 3); got != 8*time.Second {
		t.Errorf("from 2s, after 3 failures: %v, want 8s", got)
	}
}
