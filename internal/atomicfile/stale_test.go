package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A writer killed between creating its temporary file and renaming it leaves the file
// behind; the next Write of that path removes it once it is stale, and leaves alone a
// fresh one (a writer still at work), other paths' temporaries and links.
func TestWriteSweepsStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gres.conf")
	old := time.Now().Add(-2 * StaleAfter)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(".gres.conf.tmp-111", old)
	fresh := mk(".gres.conf.tmp-222", time.Now())
	other := mk(".n1.json.tmp-333", old)
	link := filepath.Join(dir, ".gres.conf.tmp-444")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale temporary of gres.conf is still there: %v", err)
	}
	for _, p := range []string{fresh, other, link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
