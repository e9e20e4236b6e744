package request

import "testing"

func TestArrayTasks(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"0-9", 10}, {"0-49", 50}, {"0-9%2", 2}, {"1,3,5-7", 5}, {"0-15:4", 4}, {"0-99%0", 100}, {"7", 1}, {"0-3%10", 4}} {
		if got, err := ArrayTasks(c.in); err != nil || got != c.want {
			t.Errorf("ArrayTasks(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "x", "9-1", "0-9:0", "0-9%x", "0-99999999999"} {
		if _, err := ArrayTasks(in); err == nil {
			t.Errorf("ArrayTasks(%q) accepted", in)
		}
	}
}
