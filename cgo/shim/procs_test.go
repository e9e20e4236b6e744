package shim

import "testing"

// Inside slurmctld Go ran with one thread per CPU (issue 10, finding 4): on a 64-CPU
// controller that is 64. It gets two, or what the administrator's GOMAXPROCS says.
func TestGoProcs(t *testing.T) {
	for _, c := range []struct {
		env  string
		cpus int
		want int
	}{
		{"", 64, 2},
		{"", 2, 2},
		{"", 1, 1},
		{"8", 64, 0}, // the administrator's value stands
		{" 1 ", 64, 0},
	} {
		if got := GoProcs(c.env, c.cpus); got != c.want {
			t.Errorf("GoProcs(%q, %d) = %d, want %d", c.env, c.cpus, got, c.want)
		}
	}
}
