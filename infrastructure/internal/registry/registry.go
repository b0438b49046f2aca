package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// EnvDataDir names the data directory, before every default.
const EnvDataDir = "PLAN_DATA_DIR"

// EntryName is a workspace's entry in its directory.
const EntryName = "workspace.json"

// ConfigCopy is the copy of the workspace's .plan/config.yaml kept beside its entry.
const ConfigCopy = "config.yaml"

// Dir resolves the data directory: PLAN_DATA_DIR, else data_dir in the per-user configuration
// (LoadUser), else $XDG_DATA_HOME/plan, else the platform's
// per-user data directory (~/.local/share/plan; on macOS ~/Library/Application Support/plan). A
// relative PLAN_DATA_DIR or XDG_DATA_HOME is refused (the XDG specification ignores a relative
// one; plan says so instead of writing somewhere that depends on where it started).
func Dir(getenv func(string) string) (string, error) {
	if getenv(EnvDataDir) != "" {
		return DirWith(getenv, User{}) // the per-user configuration is not read
	}
	u, err := LoadUser(getenv)
	if err != nil {
		return "", err
	}
	return DirWith(getenv, u)
}

// DirWith is Dir with the per-user configuration u already read (LoadUser).
func DirWith(getenv func(string) string, u User) (string, error) {
	if d := getenv(EnvDataDir); d != "" {
		if !filepath.IsAbs(d) {
			return "", fault.Invalid("%s=%q: want an absolute path", EnvDataDir, d)
		}
		return filepath.Clean(d), nil
	}
	if u.DataDir != "" {
		return u.DataDir, nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "plan"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fault.Invalid("no data directory: set %s or HOME (%v)", EnvDataDir, err)
		}
	}
	if !filepath.IsAbs(home) {
		return "", fault.Invalid("HOME=%q: want an absolute path (or set %s)", home, EnvDataDir)
	}
	return filepath.Join(home, platformDataHome, "plan"), nil
}

// Registry is a data directory.
type Registry struct {
	Root string // absolute
}

// Open checks the data directory at dir, creating it (0700) when create is set and it is
// missing. A missing one without create is fs.ErrNotExist, wrapped.
func Open(dir string, create bool) (*Registry, error) {
	if create {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return nil, unwritable(dir, err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, unwritable(dir, err)
		}
	}
	if err := private(dir, true); err != nil {
		return nil, err
	}
	r := &Registry{Root: dir}
	if create {
		if err := os.Mkdir(r.workspaces(), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, unwritable(dir, err)
		}
	}
	return r, nil
}

func unwritable(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fault.Conflict("cannot make plan's data directory %s (%v): plan keeps every workspace's history there; make it writable or set %s", dir, err, EnvDataDir)
}

// private refuses (fault.ErrConflict) a path that is not this user's alone: owned by another
// user, or open to others (group or world permission bits). dir says it must be a directory.
func private(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		return fault.Conflict("cannot read %s (%v): plan keeps every workspace's history in its data directory; make it readable or set %s", p, err, EnvDataDir)
	}
	switch {
	case dir && !fi.IsDir():
		return fault.Conflict("%s is not a directory (%s): plan's data directory must be one", p, fi.Mode().Type())
	case !dir && !fi.Mode().IsRegular():
		return fault.Conflict("%s is not a regular file (%s): refusing it", p, fi.Mode().Type())
	case !ownedByMe(fi):
		return fault.Conflict("%s belongs to another user: plan will not read or write a data directory someone else controls; set %s to a directory of your own", p, EnvDataDir)
	case fi.Mode().Perm()&0o077 != 0:
		return fault.Conflict("%s is open to other users (mode %04o): plan keeps every workspace's history there; run `chmod go-rwx %s` (and check nothing was planted in it)", p, fi.Mode().Perm(), p)
	}
	return nil
}

func (r *Registry) workspaces() string { return filepath.Join(r.Root, "workspaces") }

// StateDir is the directory of the workspace id's state.
func (r *Registry) StateDir(id string) string { return filepath.Join(r.workspaces(), id) }

// Entry is a workspace's record in the registry.
type Entry struct {
	WorkspaceID string `json:"workspace_id"`
	// Root is the directory the workspace was last opened in.
	Root string `json:"root"`
	Host string `json:"host"`
	// Device and Inode identify Root's directory itself: a directory removed and made again at
	// the same path (a new project) has other ones, a `git clean` or `rm -rf .plan` leaves them.
	Device uint64 `json:"device"`
	Inode  uint64 `json:"inode"`
	// Born is when Root's directory was made (Unix nanoseconds; 0 where the file system keeps
	// no birth time): an inode number is reused as soon as it is free, a birth time is not.
	Born      int64     `json:"born,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// AttachedAt is when Root was last bound to the workspace (made, moved or re-attached).
	AttachedAt time.Time `json:"attached_at"`
	// State is the directory this entry is in (not stored).
	State string `json:"-"`
}

// Identity reads what identifies the directory dir itself: its device, inode and birth time.
func Identity(dir string) (dev, ino uint64, birth int64, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	dev, ino = fileID(fi)
	return dev, ino, born(dir), nil
}

// Bind records dir's identity in e.
func (e *Entry) Bind(dir string) error {
	dev, ino, birth, err := Identity(dir)
	if err != nil {
		return err
	}
	e.Root, e.Device, e.Inode, e.Born = dir, dev, ino, birth
	return nil
}

// Same says whether dir is the very directory e was bound to (not only one at its path).
func (e Entry) Same(dir string) bool {
	dev, ino, birth, err := Identity(dir)
	return err == nil && dev == e.Device && ino == e.Inode && (birth == 0 || e.Born == 0 || birth == e.Born)
}

// Make creates the state directory of a new workspace id (refusing one that exists: two
// workspaces never claim one ID) and writes its entry.
func (r *Registry) Make(e Entry) error {
	dir := r.StateDir(e.WorkspaceID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fault.Conflict("the data directory %s already holds a workspace %s: two workspaces cannot claim one ID", r.Root, e.WorkspaceID)
		}
		return unwritable(r.Root, err)
	}
	e.State = dir
	return r.Save(e)
}

// Save writes e's entry (atomically, durably).
func (r *Registry) Save(e Entry) error {
	b, _ := json.MarshalIndent(e, "", "  ") // strings, numbers and times: it cannot fail
	p := filepath.Join(r.StateDir(e.WorkspaceID), EntryName)
	if err := fsx.Replace(p, append(b, '\n'), true); err != nil {
		return fmt.Errorf("write the registry entry %s: %w", p, err)
	}
	return os.Chmod(p, 0o600)
}

// Load reads the entry of workspace id. A missing one is fs.ErrNotExist (wrapped); a damaged one
// fault.ErrIntegrity naming the file.
func (r *Registry) Load(id string) (Entry, error) {
	dir := r.StateDir(id)
	p := filepath.Join(dir, EntryName)
	if err := private(p, false); err != nil {
		return Entry{}, err
	}
	b, err := os.ReadFile(p) // #nosec G304 -- plan's own data directory, checked private
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil || e.WorkspaceID != id || !filepath.IsAbs(e.Root) {
		return Entry{}, fault.Integrity("the registry entry %s is damaged (%v): the workspace's history beside it is untouched; `plan workspaces` lists it as damaged", p, errOr(err, "its fields do not name this workspace"))
	}
	e.State = dir
	return e, nil
}

func errOr(err error, msg string) any {
	if err != nil {
		return err
	}
	return msg
}

// Damaged is an entry List could not read.
type Damaged struct {
	WorkspaceID string
	State       string
	Err         error
}

// List reads every entry, sorted by root then ID, and the entries it could not read.
func (r *Registry) List() ([]Entry, []Damaged, error) {
	des, err := os.ReadDir(r.workspaces())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []Entry
	var bad []Damaged
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue // a history being removed (see bootstrap.RemoveLocal)
		}
		e, err := r.Load(de.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // being made (Make writes the entry just after the directory), or moved out into
		}
		if err != nil {
			bad = append(bad, Damaged{WorkspaceID: de.Name(), State: r.StateDir(de.Name()), Err: err})
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Root != out[j].Root {
			return out[i].Root < out[j].Root
		}
		return out[i].WorkspaceID < out[j].WorkspaceID
	})
	return out, bad, nil
}

// At returns the entries whose root is root, and the entries that could not be read (any of
// which might have been root's: a caller that would start a new history there must not guess).
func (r *Registry) At(root string) ([]Entry, []Damaged, error) {
	all, bad, err := r.List()
	if err != nil {
		return nil, nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.Root == root {
			out = append(out, e)
		}
	}
	return out, bad, nil
}

// Private refuses (fault.ErrConflict) a directory that is not this user's alone; a missing one is
// fs.ErrNotExist.
func Private(dir string) error { return private(dir, true) }

// Mine says whether the file at p belongs to the user plan runs as.
func Mine(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && ownedByMe(fi)
}
