package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// resolve follows a symbolic link at path to the file it names, so a settings file kept elsewhere
// (a dotfiles repository) is written where it lives; a missing file is path itself.
func resolve(path string) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	switch {
	case err == nil:
		return target, nil
	case errors.Is(err, fs.ErrNotExist):
		if dest, rerr := os.Readlink(path); rerr == nil {
			// A dangling link: create the file it names.
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(path), dest)
			}
			return dest, nil
		}
		return path, nil
	default:
		return "", err
	}
}

// read returns a regular file's bytes and permission bits.
func read(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	return data, fi.Mode().Perm(), err
}

// writeAtomic replaces path with data: a temporary file in the same directory with mode, fsynced,
// renamed over path, then the directory fsynced. On failure path is untouched and the temporary
// file removed.
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".plan-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	removeLeftovers(path)
	return fsx.SyncDir(dir)
}

// removeLeftovers deletes the temporary files an earlier write of path left when it was killed
// before its rename (they never hold the only copy of anything: the file itself is whole).
func removeLeftovers(path string) {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".plan-*"))
	for _, p := range left {
		_ = os.Remove(p)
	}
}
