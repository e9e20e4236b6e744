package main

import (
	"bytes"
	"strings"
	"testing"
)

// Flags whose values form a known set complete them, on every command that has them.
func TestFlagValuesComplete(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"simulate", "--policy", ""}, []string{"fgd", "gpumem", "all"}},
		{[]string{"steer", "--policy", ""}, []string{"best-fit", "spread", "gpumem"}},
		{[]string{"jobs", "-o", ""}, []string{"table", "json", "csv"}},
		{[]string{"mig", "status", "-o", ""}, []string{"table", "json", "csv"}},
		{[]string{"mig", "plan", "--model", ""}, []string{"a100-40gb", "h100-80gb", "h200-141gb"}},
		{[]string{"inventory", "--nvml", ""}, []string{"real", "mock:dgxh100", "fake:"}},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(append([]string{"__complete"}, c.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		got := strings.Fields(out.String())
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("gpumemctl %s<TAB>: %q; want %s among them", strings.Join(c.args, " "), got, w)
			}
		}
	}
}
