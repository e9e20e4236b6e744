package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/units"
)

// Key is one setting of gpumem.conf: its name in the file, its default, and the one
// setter the file and the default go through, so that a default is always a value the
// key takes. The keys of a section that are also flags ([gpumemd], [mig]) name the flag
// that sets the same value through the same setter, so that a value is taken on the
// command line exactly when it is taken in the file, and means the same; a top-level
// key has no Flag, Type, Help or Get.
type Key[C any] struct {
	Name    string // in gpumem.conf, e.g. PollInterval (read in any case)
	Flag    string // gpumemd's flag, e.g. poll-interval
	Default string // read by Set like any value, so a default is always one the key takes
	Type    string // the value's name in the flag help: duration, string, bool, int, sizes...
	Help    string
	Set     func(*C, string) error
	Get     func(*C) string // the value as a flag shows it
}

// defaults applies every key's Default to a zero C: a section's defaults.
func defaults[C any](keys []Key[C]) C {
	var c C
	for _, k := range keys {
		if err := k.Set(&c, k.Default); err != nil {
			panic(fmt.Sprintf("gpumem.conf key %s: default %q: %v", k.Name, k.Default, err))
		}
	}
	return c
}

// sectionOf is the section[C] a key table reads.
func sectionOf[C any](name string, keys []Key[C]) section[C] {
	setters := map[string]func(*C, string) error{}
	names := make([]string, len(keys))
	for i, k := range keys {
		setters[strings.ToLower(k.Name)] = k.Set
		names[i] = k.Name
	}
	known := strings.Join(names, ", ")
	return section[C]{name: name, def: func() C { return defaults(keys) }, setters: setters,
		known: func() string { return known }}
}

// renaming is s, with old key names still read (see section.renamed).
func (s section[C]) renaming(old map[string]string) section[C] {
	s.renamed = old
	return s
}

// setting is a top-level key: no flag sets it.
func setting[T any](name, def string, field func(*Config) *T, parse func(string) (T, error)) Key[Config] {
	return Key[Config]{Name: name, Default: def, Set: setter(field, parse)}
}

// setter sets the field of *C the key names with parse's value, only a good one.
func setter[C, T any](field func(*C) *T, parse func(string) (T, error)) func(*C, string) error {
	return func(c *C, v string) error { return assign(field(c), v, parse) }
}

// The key makers below pair a field with how it is read and shown. field returns the
// field of *C the key sets.

func keyOf[C, T any](name, flag, def, typ, help string, field func(*C) *T, parse func(string) (T, error), show func(T) string) Key[C] {
	return Key[C]{Name: name, Flag: flag, Default: def, Type: typ, Help: help,
		Set: setter(field, parse),
		Get: func(c *C) string { return show(*field(c)) }}
}

// text is a string key; check may be nil for free text (a name, a shell command).
func text[C any](name, flag, def, help string, field func(*C) *string, check func(string) (string, error)) Key[C] {
	if check == nil {
		check = func(v string) (string, error) { return v, nil }
	}
	return keyOf(name, flag, def, "string", help, field, check, func(s string) string { return s })
}

func boolean[C any](name, flag, def, help string, field func(*C) *bool) Key[C] {
	return keyOf(name, flag, def, "bool", help, field, parseBool, strconv.FormatBool)
}

// duration is a duration key from lo to hi (units.DurationIn).
func duration[C any](name, flag, def, help string, field func(*C) *time.Duration, lo, hi time.Duration) Key[C] {
	return keyOf(name, flag, def, "duration", help, field, durationIn(lo, hi), units.FormatFlagDuration)
}

func showSizes(mib []int64) string {
	parts := make([]string, len(mib))
	for i, m := range mib {
		parts[i] = units.FormatFlag(m)
	}
	return strings.Join(parts, ",")
}
