package history

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/usage"
)

// TestOpenOrSetAsideKeepsTheDamagedFile: a file that is not SQLite, and a real history
// whose pages were overwritten in the middle (a torn write), are renamed aside with
// their WAL, never deleted, and a new empty history takes the path; a sound one is
// opened as it is.
func TestOpenOrSetAsideKeepsTheDamagedFile(t *testing.T) {
	now := time.Date(2026, 12, 1, 23, 30, 5, 0, time.UTC)
	garbage := func(path string) {
		os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600)
		os.WriteFile(path+"-wal", []byte("an old WAL"), 0o600)
	}
	torn := func(path string) {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			if err := s.Record(now.Add(time.Duration(i)*time.Minute), []usage.Job{job(strconv.Itoa(i%300), 0, uint64(i))}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		f, _ := os.OpenFile(path, os.O_RDWR, 0)
		fi, _ := f.Stat()
		f.WriteAt([]byte(strings.Repeat("\xff\x00torn", 4096)), fi.Size()/2)
		f.Close()
	}
	for name, damage := range map[string]func(string){"not SQLite": garbage, "torn": torn} {
		path := filepath.Join(t.TempDir(), "history.db")
		damage(path)
		before, _ := os.ReadFile(path)
		s, aside, err := OpenOrSetAside(path, Options{}, now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := path + ".corrupt-20261201T233005Z"; aside != want {
			t.Errorf("%s: set aside as %q, want %q", name, aside, want)
		}
		if kept, _ := os.ReadFile(aside); string(kept) != string(before) {
			t.Errorf("%s: the damaged file was not kept as it was", name)
		}
		if jobs, err := s.Jobs(0, 10); err != nil || len(jobs) != 0 {
			t.Errorf("%s: new history holds %v, %v; want empty", name, jobs, err)
		}
		if err := s.Record(now, []usage.Job{job("1", 0, 1)}); err != nil {
			t.Errorf("%s: new history: %v", name, err)
		}
		s.Close()
		if b, _ := os.ReadFile(path + "-wal"); strings.Contains(string(b), "an old WAL") {
			t.Errorf("%s: the new history kept the old WAL", name)
		}
		s, aside, err = OpenOrSetAside(path, Options{}, now)
		if err != nil || aside != "" {
			t.Fatalf("%s: a sound history reopened: set aside %q, %v", name, aside, err)
		}
		s.Close()
	}
}

// TestOpenRefusesAFIFO: a FIFO at the history's path is refused at once, saying what it
// is (SQLite itself answered "disk I/O error: illegal seek"), and is not taken for a
// damaged file to rename.
func TestOpenRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, aside, err := OpenOrSetAside(path, Options{}, time.Now())
		if aside != "" {
			t.Errorf("a FIFO was set aside as %s", aside)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("history on a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO as the history still waits after 10s")
	}
}
