package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestFence(t *testing.T) {
	if d := Default().Fence; d != FenceOff {
		t.Fatalf("default Fence = %q, want off", d)
	}
	for in, want := range map[string]Fence{"Fence = require": FenceRequire, "fence = Prefer": FencePrefer, "FENCE = OFF": FenceOff} {
		if c, err := Parse([]byte(in + "\n")); err != nil || c.Fence != want {
			t.Errorf("%s: got %q, %v; want %q", in, c.Fence, err, want)
		}
	}
	for _, in := range []string{"Fence = yes", "Fence = required", "Fence ="} {
		c, err := Parse([]byte(in + "\n"))
		msg := "want off (shard slices on any GPU), prefer (fenced GPUs first) or require (shard slices only on fenced GPUs)"
		if err == nil || !strings.Contains(err.Error(), msg) || !reflect.DeepEqual(c, Default()) {
			t.Errorf("%s: got %+v, %v; want an error containing %q and the defaults kept", in, c.Fence, err, msg)
		}
	}
	// Beside a bad key, a good Fence holds; a typo of the key is named.
	c, err := Parse([]byte("Fence = require\nPlacementPolicy = Best Fit\nFences = require\n"))
	if c.Fence != FenceRequire || err == nil || !strings.Contains(err.Error(), `unknown key "Fences"; known keys: `) || !strings.Contains(err.Error(), "Fence") {
		t.Errorf("got %q, %v; want require applied and the unknown key named with Fence among the known", c.Fence, err)
	}
}
