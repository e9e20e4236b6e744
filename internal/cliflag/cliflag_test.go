package cliflag

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestExplain: pflag's refusals of its own types say what the flag takes; gpumem's own
// values keep their words, with the flag and the value named once.
func TestExplain(t *testing.T) {
	var n int
	var d float64
	var word, text string
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&n, "count", 1, "")
	var every time.Duration
	fs.DurationVar(&every, "every", 0, "")
	fs.Float64Var(&d, "share", 0, "")
	fs.Var(NewChoice(&word, "a", "b", "c"), "word", "")
	fs.Var(NewChecked(&text, func(v string) error { return fmt.Errorf("%q: want text", v) }), "text", "")
	fs.Var(ownDuration{}, "poll", "")
	for args, want := range map[string]string{
		"--count=x": `--count "x": want a whole number such as 3`,
		"--every=x": `--every "x": want a duration with its unit such as 30s`,
		"--share=x": `--share "x": want a number such as 0.5`,
		"--word=d":  `--word "d": want a, b or c`,
		"--text=y":  `--text "y": want text`,
		"--poll=3h": `--poll "3h": want a duration from 1s to 1h`,
	} {
		err := Explain(fs.Parse([]string{args}))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if err := fs.Parse([]string{"--word", "b"}); err != nil || word != "b" {
		t.Errorf("--word b: %v, %q", err, word)
	}
}

// ownDuration is a duration whose refusal says its range: Explain keeps its words.
type ownDuration struct{}

func (ownDuration) String() string     { return "" }
func (ownDuration) Type() string       { return "duration" }
func (ownDuration) Set(v string) error { return fmt.Errorf("want a duration from 1s to 1h") }
func (ownDuration) SaysWhy()           {}

// TestDuration: gpumemctl's duration flags take the grammar of gpumem.conf (a bare
// number of seconds too), show their default as pflag's own did, and say what they take.
func TestDuration(t *testing.T) {
	var d time.Duration
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	DurationVar(fs, &d, "timeout", 90*time.Second, "")
	if f := fs.Lookup("timeout"); f.DefValue != "1m30s" || f.Value.Type() != "duration" || d != 90*time.Second {
		t.Errorf("default %q, type %q, value %s; want 1m30s, duration", f.DefValue, f.Value.Type(), d)
	}
	var zero time.Duration
	DurationVar(fs, &zero, "every", 0, "")
	if f := fs.Lookup("every"); f.DefValue != "0" {
		t.Errorf("zero default shows as %q; want 0 (no default in the help)", f.DefValue)
	}
	for v, want := range map[string]time.Duration{"30": 30 * time.Second, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "0": 0, "-5s": -5 * time.Second} {
		if err := fs.Parse([]string{"--timeout", v}); err != nil || d != want {
			t.Errorf("--timeout %s: %s, %v; want %s", v, d, err, want)
		}
	}
	for _, v := range []string{"often", "1.5", "30 s"} {
		err := Explain(fs.Parse([]string{"--timeout", v}))
		if want := `--timeout "` + v + `": want a duration with its unit such as 30s, 10m or 1h, or a whole number of seconds`; err == nil || err.Error() != want {
			t.Errorf("--timeout %s: %v; want %q", v, err, want)
		}
	}
}
