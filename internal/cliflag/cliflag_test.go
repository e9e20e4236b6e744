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
