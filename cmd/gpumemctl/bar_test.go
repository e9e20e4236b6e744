package main

import "testing"

func TestBar(t *testing.T) {
	for _, c := range []struct {
		used, total int64
		want        string
	}{
		{0, 80, "[....................]"},
		{20, 80, "[#####...............]"},
		{1, 80, "[#...................]"}, // any use shows
		{80, 80, "[####################]"},
		{90, 80, "[####################]"},
		{0, 0, "[                    ]"},
	} {
		if got := bar(c.used, c.total); got != c.want {
			t.Errorf("bar(%d, %d) = %s; want %s", c.used, c.total, got, c.want)
		}
	}
}
