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
	setters map[string]func(*T, string) error // by lower-case key name: keys match in any case
	known   func() string                     // the key names, for "unknown key" errors
	// renamed maps a key's old name (lower case) to its name now: the old name still
	// sets it, and a file that sets it by both names is refused (see parse).
	renamed map[string]string
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
	// Keys keep the case the admin wrote, so an error shows the key as it is in the file.
	f, err := ini.LoadSources(ini.LoadOptions{InsensitiveSections: true}, b)
	if err != nil {
		return c, fmt.Errorf("not an INI file: %w", err)
	}
	name := s.name
	if name == "" {
		name = ini.DefaultSection
	}
	var errs []error
	keys := f.Section(name).Keys()
	both := s.setTwice(b, keys)
	for _, k := range keys {
		lower := strings.ToLower(k.Name())
		if now, ok := s.renamed[lower]; ok {
			lower = strings.ToLower(now)
		}
		if msg, ok := both[lower]; ok {
			if msg != "" {
				errs = append(errs, errors.New(msg))
				both[lower] = "" // said once
			}
			continue
		}
		set, ok := s.setters[lower]
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: unknown key %q; known keys: %s", keyLine(b, s.name, k.Name()), k.Name(), s.known()))
			continue
		}
		if err := set(&c, strings.TrimSpace(k.String())); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %s = %q: %w", keyLine(b, s.name, k.Name()), k.Name(), k.String(), err))
		}
	}
	return c, errors.Join(errs...)
}

// setTwice finds the keys set both by their old name and by their name now: neither
// setting is taken (the key keeps its default, as a bad value does), since which one
// the admin meant cannot be known. The messages are by the new name in lower case.
func (s section[T]) setTwice(b []byte, keys []*ini.Key) map[string]string {
	both := map[string]string{}
	for _, old := range keys {
		now, ok := s.renamed[strings.ToLower(old.Name())]
		if !ok {
			continue
		}
		for _, k := range keys {
			if strings.EqualFold(k.Name(), now) {
				both[strings.ToLower(now)] = fmt.Sprintf("line %d: %s and line %d: %s set the same key, so neither is taken: keep %s (%s is its old name) and remove the other",
					keyLine(b, s.name, old.Name()), old.Name(), keyLine(b, s.name, k.Name()), k.Name(), now, old.Name())
			}
		}
	}
	return both
}

// keyLine is the line (from 1) of the last setting of key in section ("" the top
// level) of INI document b, the one that counts; 0 if it cannot be found. ini.v1 keeps
// no line numbers, so the lines are read again here, as ini.v1 reads them: sections by
// name in any case, "KEY = value" or "KEY: value", comments after # or ;.
func keyLine(b []byte, section, key string) int {
	line, in, at := 0, section == "", 0
	for _, text := range strings.Split(string(b), "\n") {
		line++
		t := strings.TrimSpace(text)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
		case t[0] == '[':
			name, _, _ := strings.Cut(t[1:], "]")
			in = strings.EqualFold(strings.TrimSpace(name), section)
		case in:
			if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == key || !ok && strings.TrimSpace(strings.SplitN(t, ":", 2)[0]) == key {
				at = line
			}
		}
	}
	return at
}
