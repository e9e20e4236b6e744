package mig

import (
	"strings"
	"testing"
)

func TestNodeLayouts(t *testing.T) {
	file := []byte(`{"version": 1, "node": "n1", "gpus": [{"index": 0, "model": "a100-40gb", "layout": "3g.20gb@0,3g.20gb@4"}]}`)
	want, err := NodeLayouts(file, "n1")
	if err != nil || len(want) != 1 || want[0].String() != "3g.20gb@0,3g.20gb@4" {
		t.Fatalf("NodeLayouts = %v, %v", want, err)
	}
	// A file under another node's name is refused, not applied to this node's GPUs.
	if _, err := NodeLayouts(file, "n2"); err == nil || err.Error() != "desired layout file n2.json names node n1" {
		t.Errorf("another node's file: %v", err)
	}
	bad := []byte(`{"version": 1, "node": "n1", "gpus": [{"index": 0, "model": "a100-40gb", "layout": "3g.20gb@0,3g.20gb@0"}]}`)
	if _, err := NodeLayouts(bad, "n1"); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("an invalid layout: %v", err)
	}
}
