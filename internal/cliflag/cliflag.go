// Package cliflag holds the flag values and flag-error wording that gpumemd and
// gpumemctl share, so a value a flag never takes is refused while the command line is
// parsed (status 2 in both) and the refusal names the flag, the value and what the flag
// accepts, never a Go parser's text.
package cliflag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/units"
)

// Explain rewrites pflag's refusal of a value for one of its own types (int, duration,
// float, bool) into what the flag accepts; other errors pass through unchanged.
func Explain(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || iv.GetFlag() == nil {
		return err
	}
	f := iv.GetFlag()
	want, typ := "", f.Value.Type()
	if _, own := f.Value.(SaysWhy); own {
		typ = ""
	}
	switch typ {
	case "int", "int8", "int16", "int32", "int64":
		want = "a whole number such as 3"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number of 0 or more such as 3"
	case "duration":
		want = "a duration with its unit such as 30s, 10m or 1h"
	case "float32", "float64":
		want = "a number such as 0.5"
	case "bool":
		want = "true or false"
	default:
		// Values of gpumem's own types already say what they accept, some with the value.
		cause, quoted := errors.Unwrap(iv), fmt.Sprintf("%q", iv.GetValue())
		if strings.HasPrefix(cause.Error(), quoted+": ") {
			return fmt.Errorf("--%s %w", f.Name, cause)
		}
		if strings.Contains(cause.Error(), quoted) {
			return fmt.Errorf("--%s: %w", f.Name, cause)
		}
		return fmt.Errorf("--%s %q: %w", f.Name, iv.GetValue(), cause)
	}
	return fmt.Errorf("--%s %q: want %s", f.Name, iv.GetValue(), want)
}

// SaysWhy is a flag value whose refusals already say what it takes, in the words of the
// gpumem.conf key it sets: Explain passes them on with the flag and the value, whatever
// its type is called in the help.
type SaysWhy interface{ SaysWhy() }

// Choice is a flag that takes one of a fixed set of words.
type Choice struct {
	p     *string
	words []string
}

// NewChoice is a Choice over *p, whose current value is its default.
func NewChoice(p *string, words ...string) *Choice { return &Choice{p, words} }

func (c *Choice) String() string { return *c.p }
func (c *Choice) Type() string   { return "string" }

func (c *Choice) Set(v string) error {
	if !slices.Contains(c.words, v) {
		return fmt.Errorf("want %s", OrList(c.words))
	}
	*c.p = v
	return nil
}

// Checked is a string flag whose value check runs while the command line is parsed.
type Checked struct {
	p     *string
	check func(string) error
}

// NewChecked is a Checked over *p, whose current value is its default.
func NewChecked(p *string, check func(string) error) *Checked { return &Checked{p, check} }

func (c *Checked) String() string { return *c.p }
func (c *Checked) Type() string   { return "string" }

func (c *Checked) Set(v string) error {
	if err := c.check(v); err != nil {
		return err
	}
	*c.p = v
	return nil
}

// OrList is "a, b or c".
func OrList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// Parsed is a flag of any type whose value parse reads and checks while the command
// line is parsed.
type Parsed[T any] struct {
	p     *T
	parse func(string) (T, error)
	typ   string
}

// NewParsed is a Parsed over *p, whose current value is its default; typ names the
// value in the help ("share", "size").
func NewParsed[T any](p *T, typ string, parse func(string) (T, error)) *Parsed[T] {
	return &Parsed[T]{p, parse, typ}
}

func (v *Parsed[T]) String() string { return fmt.Sprint(*v.p) }

// SaysWhy: parse is gpumem's own, and its refusal says what the flag takes.
func (*Parsed[T]) SaysWhy()       {}
func (v *Parsed[T]) Type() string { return v.typ }

func (v *Parsed[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

// Duration is a duration flag read in the one grammar of gpumem.conf and gpumemd's
// flags (units.ParseDuration): a Go duration (90s, 5m, 1h30m, 168h) or a bare whole
// number of seconds (30), so a value means the same on every command line and in the
// file. Its help and default read as pflag's own duration flags did.
type Duration struct{ p *time.Duration }

// DurationVar defines a Duration flag named name on fs, over *p, with default value.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(&Duration{p}, name, usage)
}

func (d *Duration) String() string { return units.FormatFlagDuration(*d.p) }
func (d *Duration) Type() string   { return "duration" }

// SaysWhy: its refusal names the grammar, bare seconds included.
func (*Duration) SaysWhy() {}

func (d *Duration) Set(v string) error {
	x, err := units.ParseDuration(v)
	if err != nil {
		return errors.New("want " + units.DurationGrammar)
	}
	*d.p = x
	return nil
}
