package objectstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// Backend is the port through which a store reaches its files: packs and their indexes, records,
// and the few coordination files. Two adapters implement it: Dir (a local directory: a
// workspace's private store under .plan/objects, or a file:// store several workspaces share) and
// the S3 adapter in package bucket (S3-compatible object storage behind a local cache).
//
// Names are slash-separated and relative to the store's root ("packs/<id>.pack",
// "records/pending/<name>", "gc/<mark>"). Every file a store writes is immutable once visible
// except the few it replaces whole (WriteFile); a backend never exposes a file half written.
type Backend interface {
	// List returns the entries directly in dir ("" is the root), in no particular order. A missing
	// dir is empty, not an error. Subdirectories (or, remotely, common prefixes) have Dir set.
	List(dir string) ([]FileInfo, error)
	// ReadFile returns the whole file name; a missing one is an error matching fs.ErrNotExist.
	ReadFile(name string) ([]byte, error)
	// Open opens name for random-access reads (packs); fs.ErrNotExist when it is missing.
	Open(name string) (File, error)
	// Install makes the complete local file src visible as name in one step: a rename for a local
	// directory (src must be on the same file system, under the store's work directory), an upload
	// for a remote store. src is consumed: moved into place, or into the backend's cache.
	Install(src, name string) error
	// WriteFile replaces name with data atomically and durably.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// Create writes data as the new file name, durably; it fails with fs.ErrExist when name exists.
	Create(name string, data []byte, perm fs.FileMode) error
	// Rename moves from to to. Readers see to whole or not at all; a crash may leave both (the
	// caller's protocol makes that harmless).
	Rename(from, to string) error
	// Remove deletes name; a missing one is not an error.
	Remove(name string) error
	// Sync makes the installs, renames and removals done in dir durable (one directory fsync for a
	// local directory; nothing remotely, where every request is durable when it returns).
	Sync(dir string) error
	// Location names file name for messages: a path, or a URL without credentials.
	Location(name string) string
	// Shared says several workspaces may use the store at once, with no lock in common: its GC
	// must use the lock-free protocol (see GC), and its records are kept per workspace.
	Shared() bool
	// Now is the store's clock, which ages GC marks; for a remote store the server's.
	Now() (time.Time, error)
	// LocalRoot is the directory that holds the files when they are local (a Dir): the store
	// writes its packs in <root>/tmp and installs them by renaming. ok is false for a remote store.
	LocalRoot() (root string, ok bool)
}

// File is an open file of a backend.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the file's length when it was opened.
	Size() int64
}

// FileInfo describes one entry of a backend directory.
type FileInfo struct {
	Name    string // base name
	Size    int64
	ModTime time.Time
	Dir     bool
	// Tag, when a backend gives one (S3's ETag), changes whenever the file's content does: a
	// listing then tells a file unchanged without reading it. "" is unknown: read the file.
	Tag string
}

// TreeLister is the optional backend capability of listing every file under dir, at any depth, in
// as few requests as the backend allows (S3: one per thousand names, instead of one per prefix).
// Names are relative to dir, slash-separated; a missing dir is empty.
type TreeLister interface {
	ListTree(dir string) ([]FileInfo, error)
}

// ListTree lists every file under dir at any depth (see TreeLister), through the backend's own
// listing when it has one, else one List per directory.
func ListTree(be Backend, dir string) ([]FileInfo, error) {
	if tl, ok := be.(TreeLister); ok {
		return tl.ListTree(dir)
	}
	var out []FileInfo
	var walk func(rel string) error
	walk = func(rel string) error {
		d := dir
		if rel != "" {
			d = dir + "/" + rel
		}
		files, err := be.List(d)
		if err != nil {
			return err
		}
		for _, f := range files {
			name := f.Name
			if rel != "" {
				name = rel + "/" + f.Name
			}
			if f.Dir {
				if err := walk(name); err != nil {
					return err
				}
				continue
			}
			f.Name = name
			out = append(out, f)
		}
		return nil
	}
	return out, walk("")
}

// Dir is the local directory backend. A Dir store that is Shared is a file:// store of several
// workspaces; otherwise it is a workspace's private store, used under the workspace lock.
type Dir struct {
	root   string
	shared bool
}

// NewDir returns the backend of the directory root (absolute).
func NewDir(root string, shared bool) *Dir { return &Dir{root: root, shared: shared} }

var _ Backend = (*Dir)(nil)

// Root is the directory the backend's names are relative to.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(name string) string {
	if name == "" {
		return d.root
	}
	return filepath.Join(d.root, filepath.FromSlash(name))
}

// List implements Backend.
func (d *Dir) List(dir string) ([]FileInfo, error) {
	des, err := os.ReadDir(d.path(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.path(dir), err)
	}
	out := make([]FileInfo, 0, len(des))
	for _, de := range des {
		if de.IsDir() {
			out = append(out, FileInfo{Name: de.Name(), Dir: true})
			continue
		}
		var fi fs.FileInfo
		var err error
		if de.Type().IsRegular() {
			fi, err = de.Info()
		} else {
			// Something else where the store keeps files (a symlink, say): what it resolves to
			// counts, and one that cannot be examined is an error, never taken for absent.
			fi, err = os.Stat(d.path(path.Join(dir, de.Name())))
			if err == nil && !fi.Mode().IsRegular() {
				continue
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", d.path(path.Join(dir, de.Name())), err)
		}
		out = append(out, FileInfo{Name: de.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
	}
	return out, nil
}

// ReadFile implements Backend.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(d.path(name)) // #nosec G304 -- a name of this store
}

// Open implements Backend.
func (d *Dir) Open(name string) (File, error) {
	f, err := os.Open(d.path(name)) // #nosec G304 -- a name of this store
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &osFile{File: f, size: fi.Size()}, nil
}

type osFile struct {
	*os.File
	size int64
}

func (f *osFile) Size() int64 { return f.size }

// Install implements Backend: a rename, which the caller makes durable with Sync.
func (d *Dir) Install(src, name string) error {
	return os.Rename(src, d.path(name))
}

// parents creates name's directory in a shared store, where directories stand for the prefixes of
// object storage (records/<workspace id>/pending, say). A private store's directories are made
// when it is; one found missing there is damage to report, not to paper over.
func (d *Dir) parents(p string) error {
	if !d.shared {
		return nil
	}
	return os.MkdirAll(filepath.Dir(p), 0o700)
}

// WriteFile implements Backend.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	p := d.path(name)
	if err := d.parents(p); err != nil {
		return err
	}
	if err := fsx.Replace(p, data, true); err != nil {
		return err
	}
	return os.Chmod(p, perm)
}

// Create implements Backend. The file is written and synced under a temporary name, then linked
// to name, which fails if name exists: readers that hold no lock (a gc reading another workspace's
// pending records) never see it half written.
func (d *Dir) Create(name string, data []byte, perm fs.FileMode) error {
	p := d.path(name)
	if err := d.parents(p); err != nil {
		return err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp-"+hex.EncodeToString(rnd[:]))
	if err := fsx.CreateDurable(tmp, data, perm); err != nil {
		return err
	}
	err := os.Link(tmp, p)
	_ = os.Remove(tmp)
	if err != nil {
		return err
	}
	return fsx.SyncDir(filepath.Dir(p))
}

// Rename implements Backend.
func (d *Dir) Rename(from, to string) error {
	if err := d.parents(d.path(to)); err != nil {
		return err
	}
	return os.Rename(d.path(from), d.path(to))
}

// Remove implements Backend.
func (d *Dir) Remove(name string) error {
	if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Sync implements Backend.
func (d *Dir) Sync(dir string) error { return fsx.SyncDir(d.path(dir)) }

// Location implements Backend.
func (d *Dir) Location(name string) string { return d.path(name) }

// Shared implements Backend.
func (d *Dir) Shared() bool { return d.shared }

// Now implements Backend: a local directory's clock is the machine's.
func (d *Dir) Now() (time.Time, error) { return time.Now(), nil }

// LocalRoot implements Backend.
func (d *Dir) LocalRoot() (string, bool) { return d.root, true }

// AppendLine adds one line to the file name (created when missing) with one O_APPEND write, which
// readers that hold no lock may do at once. Only a local directory can append; the damage list
// of a remote store is one marker file per entry instead.
func (d *Dir) AppendLine(name, line string) error {
	f, err := os.OpenFile(d.path(name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.TrimSuffix(line, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ListNames returns the names of the entries directly in dir that are not directories, in no
// particular order, without examining any of them further (the directory read says which are
// directories); a missing dir is empty. It is what listing the records costs on every command,
// where List also stats each file.
func (d *Dir) ListNames(dir string) ([]string, error) {
	f, err := os.Open(d.path(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.path(dir), err)
	}
	defer func() { _ = f.Close() }()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.path(dir), err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		if !de.IsDir() {
			names = append(names, de.Name())
		}
	}
	return names, nil
}

// nameLister is the optional backend capability ListNames is.
type nameLister interface {
	ListNames(dir string) ([]string, error)
}

// lineAppender is the optional backend capability AppendLine is.
type lineAppender interface {
	AppendLine(name, line string) error
}
