package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateDurable creates path, which must not exist, with data and mode, and fsyncs it. The caller
// syncs the directory once it has created everything it needs there.
func CreateDurable(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// Replace replaces path with data atomically (temporary file in the same directory, then rename);
// with durable it also fsyncs the file before the rename and the directory after it.
func Replace(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	ok = true
	if !durable {
		return nil
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, making the creations, renames and removals in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir) // #nosec -- a directory plan manages
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// SyncPaths makes the listed paths under root durable (files' contents, directories' entries). On
// Linux one syncfs does it whatever the list; elsewhere each path is fsync'd (F_FULLFSYNC on
// macOS, through os.File.Sync), which costs what the list holds, not the whole tree.
func SyncPaths(root string, rels []string) error {
	if syncFSFlushes {
		return SyncFS(root)
	}
	return syncEach(root, rels)
}

func syncEach(root string, rels []string) error {
	for _, rel := range rels {
		if err := syncPath(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	return nil
}

// SyncTree makes everything under dir durable: one syncfs on Linux, an fsync of every entry
// elsewhere (for small trees: an archive being published).
func SyncTree(dir string) error {
	if syncFSFlushes {
		return SyncFS(dir)
	}
	return syncWalk(dir)
}

func syncWalk(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil // a symlink is durable with its directory's entries
		}
		return syncPath(p)
	})
}

// syncPath fsyncs one file or directory; one removed meanwhile needs nothing.
func syncPath(p string) error {
	f, err := os.Open(p) // #nosec -- a path plan manages
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// SyncFS flushes the file system that holds dir.
func SyncFS(dir string) error {
	f, err := os.Open(dir) // #nosec -- a directory plan manages
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := syncFS(f); err != nil {
		return fmt.Errorf("sync file system: %w", err)
	}
	return nil
}
