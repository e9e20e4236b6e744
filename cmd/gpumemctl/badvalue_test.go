package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// acceptsAnything are flags of a checked type that take any word (none today).
var acceptsAnything = map[string]bool{}

// TestEveryFlagRefusesABadValue walks every command and gives each flag that has a
// value to check a word it never takes: status 2, naming the flag and the value and
// saying what is wanted, never a Go parser's text.
func TestEveryFlagRefusesABadValue(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !checkedFlag(f) || acceptsAnything[f.Name] || f.Deprecated != "" {
				return
			}
			n++
			args := append(strings.Fields(c.CommandPath())[1:], "--"+f.Name, "x")
			_, err := run(t, args...)
			code, msg := exitCode(err)
			text := ""
			if msg != nil {
				text = msg.Error()
			}
			if code != 2 || !strings.Contains(text, "--"+f.Name) || !strings.Contains(text, `"x"`) ||
				!strings.Contains(text, "want") && !strings.Contains(text, "known:") || strings.Contains(text, "strconv") || strings.Contains(text, "time:") {
				t.Errorf("gpumemctl %s: status %d, %q; want 2 naming --%s \"x\" and what it takes", strings.Join(args, " "), code, text, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	t.Logf("%d flags checked", n)
	if n < 30 {
		t.Errorf("only %d flags checked: the walk misses commands", n)
	}
}

// checkedFlag is a flag whose value is checked: any type but free text and switches.
func checkedFlag(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "bool", "stringSlice", "stringArray", "count":
		return false
	case "string":
		return fmt.Sprintf("%T", f.Value) != "*pflag.stringValue"
	}
	return true
}

// TestBadValuesExitTwo: the values of the exit-code report, each refused as a command
// line mistake with what is accepted.
func TestBadValuesExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"gres", "generate", "--inventory", "x", "--shard-unit", "20"}, "a bare number is not accepted"},
		{[]string{"policy", "--shard-unit", "20"}, "a bare number is not accepted"},
		{[]string{"policy", "--shard-types", "typed"}, "want none or per-gpu"},
		{[]string{"inventory", "--nvml=bogus"}, "want real, mock:dgxa100"},
		{[]string{"report", "--start", "2026-13-01"}, `--start "2026-13-01": want YYYY-MM-DD`},
		{[]string{"mig", "plan", "--model", "v100", "20G"}, "known: a100-40gb"},
		{[]string{"mig", "plan", "20"}, "a bare number is not accepted"},
		{[]string{"inventory", "--type-style", "long"}, "want short or slurm"},
		{[]string{"jobs", "--limit", "0"}, "want 1 to 10000"},
		{[]string{"jobs", "--limit", "many"}, `--limit "many": want a whole number`},
		{[]string{"simulate", "--seeds", "0"}, "want at least 1"},
		{[]string{"simulate", "--sweep", "cpu"}, `unknown sweep axis "cpu"`},
		{[]string{"mig", "plan", "--keep-whole", "2", "20G"}, "want a share from 0 to 1"},
		{[]string{"exporter", "--listen", "127.0.0.1:99999"}, "a port from 0 to 65535"},
		{[]string{"advise", "--url", "http://127.0.0.1:1", "--by", "color"}, "want user, account or name"},
	} {
		_, err := run(t, c.args...)
		code, msg := exitCode(err)
		if code != 2 || msg == nil || !strings.Contains(msg.Error(), c.says) {
			t.Errorf("gpumemctl %s: status %d (%v), want 2 saying %q", strings.Join(c.args, " "), code, msg, c.says)
		}
	}
}
