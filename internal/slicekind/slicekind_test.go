package slicekind

import "testing"

// TestSavedSpellings: the kinds are saved in every node's history and matched by
// dashboards, so a change to the GRES names they are derived from must not move them.
func TestSavedSpellings(t *testing.T) {
	if got := [...]string{Shard, MIG, GPU, Unknown}; got != [...]string{"shard", "mig", "gpu", "unknown"} {
		t.Fatalf("kinds spelled %q", got)
	}
}
