package bar

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
		if got := Of(c.used, c.total); got != c.want {
			t.Errorf("Of(%d, %d) = %s; want %s", c.used, c.total, got, c.want)
		}
	}
}

func TestScaledBarIsAsLongAsItsShareOfTheScale(t *testing.T) {
	for _, c := range []struct {
		used, total, scale int64
		want               string
	}{
		{0, 80, 80, "[....................]"},
		{20, 80, 80, "[#####...............]"},
		{40, 40, 80, "[##########]"},
		{0, 40, 80, "[..........]"},
		{20, 40, 80, "[#####.....]"},
		{1, 40, 80, "[#.........]"},            // any use shows
		{0, 23034, 81920, "[......]"},          // 5.6 characters, rounded up
		{0, 1, 81920, "[.]"},                   // any memory shows
		{50, 40, 80, "[##########]"},           // used beyond total is all of it
		{0, 100, 80, "[....................]"}, // total beyond scale fills the width
		{0, 0, 80, "[                    ]"},
		{0, 80, 0, "[                    ]"},
	} {
		if got := Scaled(c.used, c.total, c.scale); got != c.want {
			t.Errorf("Scaled(%d, %d, %d) = %s; want %s", c.used, c.total, c.scale, got, c.want)
		}
	}
}
