package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/planhq/plan/domain/fault"
)

// StateDir is the name of the directory that holds plan's state inside a workspace.
const StateDir = ".plan"

// Layout names every path plan keeps for a workspace. Two places: <root>/.plan, inside the
// workspace (its configuration, its binding to its directory, and what must be on the workspace's
// own file system: a restore's staging and trash, the watch service's socket), and the state
// directory, where its history lives (database, store, archive, logs, journal, lock): Data, in
// the per-user data directory, for a workspace made since wave 4; <root>/.plan itself for one made
// before, or with `plan init --store workspace`.
type Layout struct {
	Root string // absolute workspace root
	// Data is the state directory outside the workspace (absolute), or "" when the state is in
	// .plan/.
	Data string
}

// NewLayout resolves root to an absolute, symlink-free path. It refuses a .plan that is not a
// directory (fault.ErrIntegrity) and one another user owns or may write in (fault.ErrConflict):
// every way of naming a workspace (discovery, -C, init, the embedding API) passes here.
func NewLayout(root string) (Layout, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return Layout{}, fmt.Errorf("resolve workspace %q: %w", root, err)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	} else if errors.Is(err, fs.ErrNotExist) {
		return Layout{}, fault.NotFound("workspace directory %s does not exist", abs)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Layout{}, fmt.Errorf("workspace %s: %w", abs, err)
	}
	if !st.IsDir() {
		return Layout{}, fault.Invalid("workspace %s is not a directory", abs)
	}
	// .plan must be a real directory inside the workspace: as a symlink, every write plan makes to
	// its state would land somewhere else, and restores would see their staging escape.
	// And it must be the user's alone, however the workspace was named (see fsx.Distrust).
	if fi, err := os.Lstat(filepath.Join(abs, StateDir)); err == nil {
		if !fi.IsDir() {
			return Layout{}, fault.Integrity("%s is not a directory (%s): plan keeps its state in a real directory there; move it away",
				filepath.Join(abs, StateDir), fi.Mode().Type())
		}
		if err := refuseUntrusted(filepath.Join(abs, StateDir), fi); err != nil {
			return Layout{}, err
		}
	}
	return Layout{Root: abs}, nil
}

// Dangerous reports why root is no place for a workspace (the file system root, the user's home
// directory itself), or "" when it is fine. Snapshotting such a tree takes everything on the
// machine, or every dotfile, into the store; peers learned this the hard way.
func (l Layout) Dangerous() string {
	if l.Root == string(filepath.Separator) {
		return "it is the file system root"
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && h == l.Root {
			return "it is your home directory"
		}
	}
	return ""
}

// State is <root>/.plan.
func (l Layout) State() string { return filepath.Join(l.Root, StateDir) }

// Home is the state directory: Data, or .plan/ when the state is inside the workspace.
func (l Layout) Home() string {
	if l.Data != "" {
		return l.Data
	}
	return l.State()
}

// Outside says the workspace's history is kept outside it.
func (l Layout) Outside() bool { return l.Data != "" }

// Database is the SQLite metadata file.
func (l Layout) Database() string { return filepath.Join(l.Home(), "plan.db") }

// Objects is the object store directory.
func (l Layout) Objects() string { return filepath.Join(l.Home(), "objects") }

// StatCache is the stat cache file.
func (l Layout) StatCache() string { return filepath.Join(l.Home(), "statcache") }

// JournalFile is the operation journal.
func (l Layout) JournalFile() string { return filepath.Join(l.Home(), "journal.json") }

// LockFile is the flock target.
func (l Layout) LockFile() string { return filepath.Join(l.Home(), "lock") }

// Staging is where a restore stages new content (relative to the root, for os.Root calls).
func (l Layout) Staging() string { return StateDir + "/staging" }

// Trash holds, each in a directory of its own, what restores replaced, until it is removed
// (relative to the root, for os.Root calls).
func (l Layout) Trash() string { return StateDir + "/trash" }

// Archive is the corrections archive directory.
func (l Layout) Archive() string { return filepath.Join(l.Home(), "archive") }

// Logs holds decisions' output.
func (l Layout) Logs() string { return filepath.Join(l.Home(), "logs") }

// StoreHolds reports whether the store's subdirectory sub ("packs", "records") holds a file:
// something a lost database would have referenced.
func (l Layout) StoreHolds(sub string) bool {
	entries, err := os.ReadDir(filepath.Join(l.Objects(), sub))
	for _, e := range entries {
		if err == nil && e.Type().IsRegular() {
			return true
		}
	}
	return false
}

// Initialized reports whether the state directory holds a database.
func (l Layout) Initialized() bool {
	st, err := os.Stat(l.Database())
	return err == nil && st.Mode().IsRegular()
}

// Init creates .plan/, the state directory and its directories, and a .plan/.gitignore that keeps
// plan's files out of a `git add -A` of the workspace (plan never touches .git itself); it is
// idempotent.
func (l Layout) Init() error {
	for _, d := range []string{l.State(), l.Home(), l.Objects(), l.Archive(), l.Logs()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	gi := filepath.Join(l.State(), ".gitignore")
	if _, err := os.Lstat(gi); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(gi, []byte("# plan's state: never commit it\n*\n"), 0o644); err != nil { // #nosec G306 -- read by git, holds no secret
			return fmt.Errorf("create %s: %w", gi, err)
		}
	}
	return nil
}

// RequireInitialized fails with fault.ErrNotFound and a hint when .plan/ is missing.
func (l Layout) RequireInitialized() error {
	if !l.Initialized() {
		if l.Outside() {
			return fault.NotFound("%s is not a plan workspace (its state directory %s holds no plan.db): run `plan init`", l.Root, l.Data)
		}
		return fault.NotFound("%s is not a plan workspace (no %s/plan.db): run `plan init`", l.Root, StateDir)
	}
	return nil
}

// CheckWritable reports, as one clear error, when plan cannot write its state directory (read-only
// permissions, an immutable flag, a read-only file system); nil when it can. SQLite's own error for
// this ("unable to open database file") names neither the directory nor the cause.
func (l Layout) CheckWritable() error {
	for _, d := range []string{l.State(), l.Home()} {
		if err := writable(d); err != nil {
			return err
		}
	}
	return nil
}

func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fault.Conflict("cannot write to %s (%v): plan keeps its state there; make it writable", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}
