package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/ini.v1"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// MaxFileBytes bounds gpumem.conf: a few hundred keys at most, so a megabyte is far
// more than any real file and little enough that slurmctld, gpumemd or a user's sbatch
// (cli_filter) never holds a runaway file in memory.
const MaxFileBytes = 1 << 20

// section reads one part of gpumem.conf: the top-level keys every part shares, or a
// [name] section of one part's own. Both are read the same way: a missing file means
// the defaults, every key goes through its setter, a bad key keeps its default, and
// all problems come back joined in one error.
type section[T any] struct {
	name    string // "" for the top-level keys
	def     func() T
	setters map[string]func(*T, string) error // by lower-case key name
	known   func() string                     // the key names, for "unknown key" errors
}

// load reads path: a regular file of at most MaxFileBytes, so that a FIFO, a device or
// a huge file named as gpumem.conf is refused at once instead of blocking or filling
// memory. /dev/null is the one exception, read as an empty file: it is how a lab or a
// script says "no gpumem.conf, the flags and defaults only".
func (s section[T]) load(path string) (T, error) {
	if path == os.DevNull {
		return s.def(), nil
	}
	b, err := atomicfile.ReadCapped(path, MaxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return s.def(), nil
	}
	if err != nil {
		return s.def(), fmt.Errorf("gpumem.conf: %w", err)
	}
	c, err := s.parse(b)
	if err != nil {
		where := path
		if s.name != "" {
			where += " [" + s.name + "]"
		}
		return c, fmt.Errorf("%s: %w", where, err)
	}
	return c, nil
}

// parse reads the section from an INI document; other sections are left to their
// owners.
func (s section[T]) parse(b []byte) (T, error) {
	c := s.def()
	f, err := ini.LoadSources(ini.LoadOptions{Insensitive: true}, b)
	if err != nil {
		return c, fmt.Errorf("not an INI file: %w", err)
	}
	name := s.name
	if name == "" {
		name = ini.DefaultSection
	}
	var errs []error
	for _, k := range f.Section(name).Keys() {
		set, ok := s.setters[k.Name()]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown key %q; known keys: %s", k.Name(), s.known()))
			continue
		}
		if err := set(&c, strings.TrimSpace(k.String())); err != nil {
			errs = append(errs, fmt.Errorf("%s = %q: %w", k.Name(), k.String(), err))
		}
	}
	return c, errors.Join(errs...)
}
