package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestInstallKeepsPreviousAndSkipsUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gres.conf")
	changed, err := Install(path, []byte("a\n"), nil)
	if err != nil || !changed {
		t.Fatalf("first install: %v %v", changed, err)
	}
	fi, _ := os.Stat(path)
	if changed, err := Install(path, []byte("a\n"), func([]byte) error { t.Fatal("checked an unchanged file"); return nil }); err != nil || changed {
		t.Fatalf("unchanged install: %v %v", changed, err)
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("an unchanged file was rewritten")
	}
	if changed, err := Install(path, []byte("b\n"), nil); err != nil || !changed {
		t.Fatalf("second install: %v %v", changed, err)
	}
	if prev, _ := os.ReadFile(path + PrevSuffix); string(prev) != "a\n" {
		t.Errorf("prev = %q; want the old file", prev)
	}
	rejected := errors.New("slurmd says no")
	if _, err := Install(path, []byte("broken\n"), func([]byte) error { return rejected }); !errors.Is(err, rejected) {
		t.Fatalf("rejected install: %v", err)
	}
	if cur, _ := os.ReadFile(path); string(cur) != "b\n" {
		t.Errorf("after a rejected install the file is %q; want the last good one", cur)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Errorf("left %d files behind; want gres.conf and gres.conf.prev", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v; want 0644", fi.Mode().Perm())
	}
}

func TestInstallIntoMissingDirFailsCleanly(t *testing.T) {
	if _, err := Install(filepath.Join(t.TempDir(), "no", "gres.conf"), []byte("x"), nil); err == nil {
		t.Fatal("installed into a missing directory")
	}
}

// TestInstallRefusesLinks: a link at the path, or at its .prev, is neither followed
// nor replaced, and the error names it.
func TestInstallRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("theirs\n"), 0o600)
	for _, name := range []string{"gres.conf", "other.conf"} {
		path := filepath.Join(dir, name)
		link := path
		if name == "other.conf" {
			os.WriteFile(path, []byte("old\n"), 0o644)
			link = path + PrevSuffix
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := Install(path, []byte("ours\n"), nil)
		if err == nil || !strings.Contains(err.Error(), link+" is a symbolic link") {
			t.Errorf("install over a link at %s: %v; want an error naming the link", link, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", link)
		}
		if b, _ := os.ReadFile(target); string(b) != "theirs\n" {
			t.Errorf("wrote %q through the link", b)
		}
	}
}

// TestWriteUsesItsOwnTempFile: a file or link already at a predictable temporary name
// is left alone, and nothing is left behind.
func TestWriteUsesItsOwnTempFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "usage.json")
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	for _, tmp := range []string{path + ".tmp", filepath.Join(dir, ".usage.json.tmp")} {
		if err := os.Symlink(victim, tmp); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("victim now holds %q", b)
	}
	if b, _ := Read(path); string(b) != "{}\n" {
		t.Errorf("read back %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("%d entries in the directory; want the file, the victim and the two links", len(entries))
	}
}

func TestReadRefusesALink(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "real"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	if _, err := Read(filepath.Join(dir, "link")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Read through a link: %v", err)
	}
}

// TestReadCappedRefusesWithoutBlocking: a FIFO with no writer, a directory and a file
// over the cap are refused at once; a file at the cap is read.
func TestReadCappedRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCapped(fifo, 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := ReadCapped(dir, 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v, want ErrNotRegular", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte("0123456789x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCapped(big, 10); err == nil || !strings.Contains(err.Error(), "11 bytes, more than the 10 allowed") {
		t.Errorf("over the cap: %v", err)
	}
	if b, err := ReadCapped(big, 11); err != nil || string(b) != "0123456789x" {
		t.Errorf("at the cap: %q %v", b, err)
	}
}
