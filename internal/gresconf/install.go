package gresconf

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PrevSuffix names the kept previous version: gres.conf -> gres.conf.prev.
const PrevSuffix = ".prev"

// Install puts data at path unless the file already holds exactly that. check, when
// not nil, must accept data first. The new file is written beside the old one and
// renamed over it, so a reader (slurmd) sees the old file or the new one, never a
// torn or empty one; the old one is kept at path+PrevSuffix. It reports whether
// anything changed.
func Install(path string, data []byte, check func([]byte) error) (bool, error) {
	old, err := os.ReadFile(path)
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
		if err := writeAtomic(path+PrevSuffix, old); err != nil {
			return false, fmt.Errorf("install %s: keeping the previous version: %w", path, err)
		}
	}
	if err := writeAtomic(path, data); err != nil {
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	return true, nil
}

// writeAtomic writes data to a temporary file in path's directory, syncs it and
// renames it over path. A dot-name keeps half-written files out of *.json globs.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
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
	if err = f.Chmod(0o644); err != nil {
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
