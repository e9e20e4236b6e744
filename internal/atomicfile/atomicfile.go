// Package atomicfile replaces files that other processes read (gres.conf, the per-node
// inventory, the steering snapshot) so that a reader sees the old file or the new one,
// never a torn or empty one, and so that gpumem, running as root, never writes through
// a link someone else placed.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// PrevSuffix names the previous version Install keeps: gres.conf -> gres.conf.prev.
const PrevSuffix = ".prev"

// Write puts data at path with mode perm: it writes a temporary file of its own in
// path's directory (a dot-name, so *.json globs never see a half-written file), syncs
// it, renames it over path and syncs the directory. A path that is a symbolic link is
// refused, not replaced: an admin who linked it meant it to stay a link.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	if err := notLink(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	sweepStale(dir, "."+filepath.Base(path)+".tmp-")
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename itself durable; best effort on filesystems without it
		d.Close()
	}
	return nil
}

// StaleAfter is how old a temporary file of Write must be before a later Write of the
// same path removes it: a write takes milliseconds, so one this old was left by a
// writer that died (kill -9, a reboot) between creating and renaming it.
const StaleAfter = 10 * time.Minute

// sweepStale removes the plain files in dir named prefix* that are older than
// StaleAfter: temporaries of path that a dead writer left behind, which nothing else
// would ever remove. Best effort; anything it cannot read or remove stays.
func sweepStale(dir, prefix string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > StaleAfter {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Install puts data at path (mode 0644) unless the file already holds exactly that.
// check, when not nil, must accept data first. The old file is kept at
// path+PrevSuffix. It reports whether anything changed.
func Install(path string, data []byte, check func([]byte) error) (bool, error) {
	old, err := Read(path)
	switch {
	case err == nil && bytes.Equal(old, data):
		return false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	if check != nil {
		if err := check(data); err != nil {
			return false, fmt.Errorf("install %s: not replaced: %w", path, err)
		}
	}
	if err == nil {
		if err := Write(path+PrevSuffix, old, 0o644); err != nil {
			return false, fmt.Errorf("install %s: keeping the previous version: %w", path, err)
		}
	}
	if err := Write(path, data, 0o644); err != nil {
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	return true, nil
}

// Read reads a file gpumem wrote, without following a symbolic link at path.
func Read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, linkError(path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func notLink(path string) error {
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return linkError(path)
	}
	return nil
}

func linkError(path string) error {
	to, _ := os.Readlink(path)
	return fmt.Errorf("%s is a symbolic link (to %q); gpumem does not replace links: remove it, or point gpumem at the file itself", path, to)
}

// ErrNotRegular is ReadCapped's answer for a directory, device, socket or FIFO.
var ErrNotRegular = errors.New("not a regular file")

// ReadCapped reads a regular file of at most limit bytes, for files a daemon reads on a
// timer (inventory, usage snapshot, its own state) and for every configuration file
// (gpumem.conf, slurm.conf and what it includes). The open never blocks on a FIFO, and
// the limit holds on what is read, not only on the size stat gave, so a file that grows
// while it is read is still refused. Errors are *fs.PathError naming path (and the
// limit, for a file too large); errors.Is finds ErrNotRegular and os.ErrNotExist.
func ReadCapped(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if fi.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, more than the %d allowed", fi.Size(), limit)}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("more than the %d bytes allowed", limit)}
	}
	return b, nil
}

// kind names a file mode that is not a regular file's.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
