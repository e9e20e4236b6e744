package history

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mattn/go-sqlite3"
)

// ErrCorrupt marks a database SQLite cannot use: not an SQLite file at all, or one whose
// pages are damaged (a torn write, a disk error, a file cut short).
var ErrCorrupt = errors.New("history database is damaged")

// IsCorrupt reports whether err says the database file itself is damaged, as opposed to
// a problem around it (a full disk, a permission) that a retry may get past.
func IsCorrupt(err error) bool {
	var e sqlite3.Error
	if errors.As(err, &e) {
		return e.Code == sqlite3.ErrCorrupt || e.Code == sqlite3.ErrNotADB
	}
	return errors.Is(err, ErrCorrupt)
}

// OpenOrSetAside opens the database at path as Open does, and checks it (SQLite's
// quick_check). A damaged one is set aside, never deleted: it and its WAL and
// shared-memory files are renamed PATH.corrupt-TIME (TIME in UTC, to the second) so an
// admin can look at it or recover from it, and a new, empty database takes its place.
// aside is the name it got, "" when nothing was set aside. Errors other than damage
// (the folder cannot be written, ...) are returned as they are.
func OpenOrSetAside(path string, opts Options, now time.Time) (s *Store, aside string, err error) {
	s, err = Open(path, opts)
	if err == nil {
		err = s.check()
		if err == nil {
			return s, "", nil
		}
		s.Close()
	}
	if !IsCorrupt(err) {
		return nil, "", err
	}
	aside, err = SetAside(path, now)
	if err != nil {
		return nil, "", err
	}
	s, err = Open(path, opts)
	return s, aside, err
}

// check runs SQLite's quick_check: linear in the file, once at start.
func (s *Store) check() error {
	var r string
	if err := s.db.QueryRow("PRAGMA quick_check(1)").Scan(&r); err != nil {
		return err
	}
	if r != "ok" {
		return fmt.Errorf("%w: %s", ErrCorrupt, r)
	}
	return nil
}

// SetAside renames the database at path, with its -wal and -shm files, to
// PATH.corrupt-TIME (the same suffix before -wal and -shm, so SQLite opens the set of
// them together), and returns the new name. The WAL must go with the file: left behind,
// SQLite would replay it into the new database. The store must be closed.
func SetAside(path string, now time.Time) (string, error) {
	aside := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	for i := 1; exists(aside); i++ {
		aside = fmt.Sprintf("%s.corrupt-%s.%d", path, now.UTC().Format("20060102T150405Z"), i)
	}
	// The WAL first: a main file renamed without it would leave it to the new one.
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("history %s: setting the damaged file aside: %w", path, err)
		}
	}
	return aside, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
