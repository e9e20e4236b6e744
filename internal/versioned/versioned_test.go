package versioned

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		f    Format
		v    int
		want string // "" accepted
	}{
		{Inventory, 0, ""}, // before the field: version 1
		{Inventory, 1, ""},
		{Inventory, 2, ""},
		{Inventory, 3, ""},
		{Inventory, 4, "inventory: format version 4; this gpumem reads versions 1 to 3: upgrade gpumem"},
		{Inventory, -1, "format version -1"},
		{HealthState, 0, "health state: format version 0; this gpumem reads version 1"},
		{HealthState, 1, ""},
		{MIGJournal, 1, ""},
		{RefusalCounts, 2, "reads version 1: it was written by a newer job_submit/gpumem"},
	} {
		err := c.f.Check(c.v)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s version %d: %v; want %q", c.f.Name, c.v, err, c.want)
		}
	}
}

func TestStrictRefusesWhatItDoesNotKnow(t *testing.T) {
	var v struct {
		Version int    `json:"version"`
		Node    string `json:"node"`
	}
	for in, want := range map[string]string{
		`{"version": 1, "node": "n1"}`:              "",
		`{"version": 1, "node": "n1", "nodes": []}`: `unknown field "nodes"`,
		`{"version": 1, "node": "n1"} {}`:           "after top-level value",
		`{"version": 1, "node": `:                   "unexpected end of JSON input",
	} {
		err := Strict([]byte(in), &v)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v; want %q", in, err, want)
		}
	}
}
