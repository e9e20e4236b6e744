package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// source keeps the last good inventory and looks for a new one at most once per
// interval, so the submit path costs one clock read on most jobs and a few stat calls on
// the rest. It is used from one thread at a time (slurmctld holds its job write lock
// around job_submit), so it needs no lock of its own.
type source struct {
	path     string
	interval time.Duration
	load     func(string) (inventory.Cluster, error)

	checked time.Time // last look at the files
	sig     string    // what the files looked like when last loaded or refused
	cluster *inventory.Cluster
}

// changed reports a new inventory, or (nil, nil) when there is none to take. A broken
// one returns an error once per change of the files and leaves the last good one in use.
func (s *source) refresh(now time.Time) (*inventory.Cluster, error) {
	if s.cluster != nil && now.Sub(s.checked) < s.interval {
		return nil, nil
	}
	s.checked = now
	sig, err := signature(s.path)
	if err != nil {
		sig = "error: " + err.Error()
	}
	if sig == s.sig {
		return nil, nil
	}
	s.sig = sig
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", s.path, err)
	}
	c, err := s.load(s.path)
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", s.path, err)
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("inventory %s: no nodes", s.path)
	}
	s.cluster = &c
	return &c, nil
}

// nextCheck is when refresh will next look at the files.
func (s *source) nextCheck() time.Time { return s.checked.Add(s.interval) }

// signature summarises name, size and modification time of the inventory file, or of
// every *.json in the directory: a node rewritten in place changes its file's time, one
// added or removed changes the list.
func signature(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return stamp(fi), nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(path, n))
		if errors.Is(err, os.ErrNotExist) {
			continue // renamed away while we looked; the next look sees the new list
		}
		if err != nil {
			return "", err
		}
		b.WriteString(n)
		b.WriteString(stamp(fi))
	}
	return b.String(), nil
}

func stamp(fi os.FileInfo) string {
	return fmt.Sprintf("|%d|%d;", fi.Size(), fi.ModTime().UnixNano())
}
