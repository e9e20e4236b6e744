package shard

import (
	"strings"
	"testing"
)

func TestPerGPUNeverPromisesMissingMemory(t *testing.T) {
	for _, c := range []struct{ mem, unit, want int64 }{
		{81559, 1024, 79}, {81920, 1024, 80}, {81919, 1024, 79}, {1023, 1024, 0}, {1000, 1024, 0},
		{40960, 2048, 20}, {144384, 2048, 70}, {0, 1024, 0}, {-5, 1024, 0}, {100, 0, 0},
	} {
		if got := PerGPU(c.mem, c.unit); got != c.want || got*c.unit > max(c.mem, 0) {
			t.Errorf("PerGPU(%d, %d) = %d; want %d", c.mem, c.unit, got, c.want)
		}
	}
}

func TestForRoundsUp(t *testing.T) {
	for _, c := range []struct{ mib, unit, want int64 }{
		{1, 1024, 1}, {1024, 1024, 1}, {1025, 1024, 2}, {20480, 1024, 20}, {20481, 1024, 21}, {5000, 2048, 3}, {512, 512, 1},
	} {
		if got := For(c.mib, c.unit); got != c.want || got*c.unit < c.mib || (got-1)*c.unit >= c.mib {
			t.Errorf("For(%d, %d) = %d; want %d", c.mib, c.unit, got, c.want)
		}
	}
}

func TestUnit(t *testing.T) {
	if u, err := Unit(0); err != nil || u != DefaultUnitMiB {
		t.Errorf("Unit(0) = %d, %v; want %d", u, err, DefaultUnitMiB)
	}
	if u, err := Unit(512); err != nil || u != 512 {
		t.Errorf("Unit(512) = %d, %v; want 512", u, err)
	}
	if _, err := Unit(-1); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("Unit(-1): %v; want an error asking for a positive size", err)
	}
}

func TestTypeName(t *testing.T) {
	for _, c := range []struct {
		model string
		idx   int
		want  string
	}{{"h100", 1, "h100_g1"}, {"a10", 12, "a10_g12"}} {
		if got := TypeName(c.model, c.idx); got != c.want {
			t.Errorf("TypeName(%s, %d) = %q; want %s", c.model, c.idx, got, c.want)
		}
	}
}
