package slurmgres

import "testing"

// TestIsCountDrain: slurmctld's own reasons for a node with too few GRES, in each
// release's wording, and nothing that only looks alike.
func TestIsCountDrain(t *testing.T) {
	yes := []string{"gres/gpu count reported lower than configured (1 < 4)", "gres/gpu:3g.20gb count too low (0 < 2)", "gres/shard count too low (0 < 80)"}
	no := []string{"swap the gpu count too low board", "gres/gpu: admin checking the count", ""}
	for _, r := range yes {
		if !IsCountDrain(r) {
			t.Errorf("IsCountDrain(%q) = false", r)
		}
	}
	for _, r := range no {
		if IsCountDrain(r) {
			t.Errorf("IsCountDrain(%q) = true", r)
		}
	}
}
