package refusalcount

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// Counts from many goroutines, written and read back: every class present, the
// version stamped, the file private; a link at the path is refused, not followed.
func TestCountWriteRead(t *testing.T) {
	var k Counter
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				k.Add(NoFit)
			}
			k.Add(Invalid)
		}()
	}
	wg.Wait()
	k.Add(Class(99)) // not a class: ignored, never a label
	dir := t.TempDir()
	path := filepath.Join(dir, "refusals.json")
	since := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	if err := Write(path, State{Since: since, Written: since.Add(time.Minute), Refused: k.Counts()}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(path)
	want := map[string]uint64{"invalid_request": 8, "no_fit": 800, "gpumem_unavailable": 0}
	if err != nil || s.Version != Version || !s.Since.Equal(since) || !reflect.DeepEqual(s.Refused, want) {
		t.Fatalf("read back %+v, %v; want version %d since %s and %v", s, err, Version, since, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, State{Refused: k.Counts()}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("write through a link: %v; want it refused", err)
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v; want not-exist", err)
	}
}
