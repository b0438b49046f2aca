package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// Exporter copies stored entries into a directory that is not a workspace (plan restore --target).
//
// Invariants:
//   - target MUST end up either as it was (missing, or an empty directory) or holding the complete
//     copy: the copy is built in a fresh sibling directory, made durable, and renamed onto target
//     (rename(2) replaces an empty directory atomically);
//   - nothing is written through a symlink: every entry's parent MUST be a directory this export
//     created, and files are created with O_EXCL|O_NOFOLLOW;
//   - content is verified against its hash as it is read from the store; a damaged object fails
//     the export and nothing of it is left behind (a sibling left by a kill -9 is named
//     .NAME.plan-restore-* and holds nothing but the partial copy).
type Exporter struct{ store *objectstore.Store }

// NewExporter returns an exporter reading from store.
func NewExporter(store *objectstore.Store) *Exporter { return &Exporter{store: store} }

// Export implements application.Exporter.
func (x *Exporter) Export(ctx context.Context, entries []tree.Entry, target string, p port.Progress) (stats port.ExportStats, err error) {
	target = filepath.Clean(target)
	if err := exportTarget(target); err != nil {
		return stats, err
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil { // #nosec G301 -- the user's own directory, as mkdir -p makes it
		return stats, fmt.Errorf("create %s: %w", parent, err)
	}
	stage, err := os.MkdirTemp(parent, "."+filepath.Base(target)+".plan-restore-")
	if err != nil {
		return stats, fmt.Errorf("restore into %s: %w", target, err)
	}
	defer func() {
		if err != nil {
			removeAll(stage)
		}
	}()
	if p != nil {
		p.Start("restore", int64(len(entries)))
		defer p.Done()
	}
	dirs := map[string]bool{"": true}
	var modes []tree.Entry // directories, to be given their modes once their content is in
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		if !dirs[parentOf(e.Path)] {
			return stats, fault.Integrity("%s: its directory is not a directory of the checkpoint", e.Path)
		}
		dst := filepath.Join(stage, filepath.FromSlash(e.Path))
		switch e.Kind {
		case tree.KindDir:
			if err := os.Mkdir(dst, 0o700); err != nil {
				return stats, fmt.Errorf("create %s: %w", e.Path, err)
			}
			dirs[e.Path] = true
			modes = append(modes, e)
			stats.Dirs++
		case tree.KindSymlink:
			if err := os.Symlink(e.Target, dst); err != nil {
				return stats, fmt.Errorf("create %s: %w", e.Path, err)
			}
			stats.Symlinks++
		case tree.KindFile:
			n, err := x.writeFile(dst, e)
			if err != nil {
				return stats, err
			}
			stats.Files++
			stats.Bytes += n
		default:
			return stats, fault.Integrity("%s: unknown entry kind %d", e.Path, e.Kind)
		}
		if p != nil {
			p.Add(1)
		}
	}
	// Deepest first, so a directory made read-only does not stop its children getting their modes.
	for _, d := range slices.Backward(modes) {
		if err := os.Chmod(filepath.Join(stage, filepath.FromSlash(d.Path)), tree.GoMode(d.Mode)); err != nil {
			return stats, fmt.Errorf("set the mode of %s: %w", d.Path, err)
		}
	}
	if err := os.Chmod(stage, 0o755); err != nil { // #nosec G302 -- a directory, as mkdir makes it
		return stats, err
	}
	if err := fsx.SyncTree(stage); err != nil {
		return stats, err
	}
	// syscall.Rename, not os.Rename: os.Rename refuses an existing directory as the new name, and
	// replacing the empty target in one step is the point.
	if err := syscall.Rename(stage, target); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return stats, fault.Conflict("%s is no longer empty: nothing was restored into it", target)
		}
		return stats, fmt.Errorf("restore into %s: %w", target, err)
	}
	return stats, fsx.SyncDir(parent)
}

// exportTarget checks that target can take a copy: missing, or an empty directory (not a symlink
// to one).
func exportTarget(target string) error {
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fault.Invalid("%s cannot be restored into: %v", target, err)
	case !fi.IsDir():
		return fault.Invalid("%s is not a directory: restore into a new or empty directory", target)
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		return fault.Invalid("%s cannot be restored into: %v", target, err)
	}
	if len(entries) > 0 {
		return fault.Conflict("%s is not empty: restore into a new or empty directory", target)
	}
	return nil
}

// writeFile creates dst (which must not exist) with e's verified content and mode.
func (x *Exporter) writeFile(dst string, e tree.Entry) (int64, error) {
	rc, err := x.store.OpenBlob(e.Hash)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", e.Path, err)
	}
	defer func() { _ = rc.Close() }()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", e.Path, err)
	}
	n, err := io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("write %s: %w", e.Path, err)
	}
	if err := os.Chmod(dst, tree.GoMode(e.Mode)); err != nil {
		return n, fmt.Errorf("set the mode of %s: %w", e.Path, err)
	}
	return n, nil
}

// removeAll deletes a partial copy, making its directories writable first (a copied read-only
// directory would otherwise keep its content). It works through an os.Root on the copy, so a
// directory swapped for a symlink meanwhile cannot lead a chmod outside it.
func removeAll(dir string) {
	if root, err := os.OpenRoot(dir); err == nil {
		_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = root.Chmod(p, 0o700) // #nosec G302 -- our own partial copy, about to be deleted
			}
			return nil
		})
		_ = root.Close()
	}
	_ = os.RemoveAll(dir)
}
