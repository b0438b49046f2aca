package bootstrap

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/registry"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Directory states of a local workspace (LocalWorkspace.Directory).
const (
	// DirPresent: the directory holds the workspace.
	DirPresent = "present"
	// DirDetached: the directory is there but lost its .plan/ (`plan init` there re-attaches).
	DirDetached = "detached"
	// DirReplaced: another directory, or another workspace, is at the path now.
	DirReplaced = "replaced"
	// DirGone: nothing is at the path (deleted, or moved and not opened since).
	DirGone = "gone"
	// DirDamaged: the registry entry cannot be read.
	DirDamaged = "damaged"
)

// LocalWorkspace is a workspace the data directory keeps a history for.
type LocalWorkspace struct {
	ID, Root, Host   string
	CreatedAt        time.Time
	Directory        string
	HistoryDir       string
	Bytes            int64
	Checkpoints      int
	LastCheckpointAt time.Time
	// Counted says Checkpoints and LastCheckpointAt were read (from its own SQLite database).
	Counted bool
	Store   string
	Problem string
}

// DataDir is the data directory the environment names.
func DataDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return registry.Dir(getenv)
}

// LocalWorkspaces lists every workspace the data directory keeps a history for, those whose
// directory is gone included, and the entries it cannot read.
func LocalWorkspaces(ctx context.Context, getenv func(string) string) ([]LocalWorkspace, error) {
	dir, err := DataDir(getenv)
	if err != nil {
		return nil, err
	}
	reg, err := registry.Open(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, bad, err := reg.List()
	if err != nil {
		return nil, err
	}
	out := make([]LocalWorkspace, 0, len(entries)+len(bad))
	for _, e := range entries {
		out = append(out, describeLocal(ctx, e))
	}
	for _, b := range bad {
		out = append(out, LocalWorkspace{ID: b.WorkspaceID, HistoryDir: b.State, Directory: DirDamaged, Bytes: treeBytes(b.State), Problem: b.Err.Error()})
	}
	return out, nil
}

func describeLocal(ctx context.Context, e registry.Entry) LocalWorkspace {
	w := LocalWorkspace{ID: e.WorkspaceID, Root: e.Root, Host: e.Host, CreatedAt: e.CreatedAt, HistoryDir: e.State,
		Directory: directoryOf(e), Bytes: treeBytes(e.State)}
	f, _ := config.Load(filepath.Join(e.State, registry.ConfigCopy))
	w.Store = f.Store
	db := filepath.Join(e.State, "plan.db")
	if _, err := os.Stat(db); err != nil || f.DB != "" {
		return w
	}
	d, err := persistence.Open(ctx, db, false, persistence.WithWorkspace(e.WorkspaceID))
	if err != nil {
		w.Problem = err.Error()
		return w
	}
	defer func() { _ = d.Close() }()
	rows, err := d.Workspaces(ctx)
	if err != nil {
		w.Problem = err.Error()
		return w
	}
	for _, r := range rows {
		if r.ID == e.WorkspaceID {
			w.Checkpoints, w.LastCheckpointAt, w.Counted = r.Checkpoints, r.Newest, true
		}
	}
	return w
}

// directoryOf says what is at the entry's root now.
func directoryOf(e registry.Entry) string {
	if _, err := os.Stat(e.Root); err != nil {
		return DirGone
	}
	f, err := config.Load(config.Path(filepath.Join(e.Root, workspace.StateDir)))
	switch {
	case err == nil && f.WorkspaceID == e.WorkspaceID:
		return DirPresent
	case err == nil && f.WorkspaceID == "" && e.Same(e.Root):
		return DirDetached
	}
	return DirReplaced
}

// treeBytes is what the files below dir take, as their sizes add up.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// FindLocal is the local workspace ref names: its full ID or a unique prefix of at least four
// characters.
func FindLocal(ctx context.Context, getenv func(string) string, ref string) (LocalWorkspace, error) {
	all, err := LocalWorkspaces(ctx, getenv)
	if err != nil {
		return LocalWorkspace{}, err
	}
	if len(ref) < 4 {
		return LocalWorkspace{}, fault.Invalid("workspace ID %q: give at least 4 characters", ref)
	}
	var hits []LocalWorkspace
	for _, w := range all {
		if w.ID == ref {
			hits = []LocalWorkspace{w}
			break
		}
		if strings.HasPrefix(w.ID, ref) {
			hits = append(hits, w)
		}
	}
	switch {
	case len(hits) == 0:
		return LocalWorkspace{}, fault.NotFound("no local workspace %s (`plan workspaces` lists them)", ref)
	case len(hits) > 1:
		return LocalWorkspace{}, fault.Invalid("workspace ID prefix %q is ambiguous (%d workspaces)", ref, len(hits))
	case hits[0].Directory == DirDamaged:
		return LocalWorkspace{}, fault.Integrity("the registry entry of workspace %s cannot be read: %s", hits[0].ID, hits[0].Problem)
	}
	return hits[0], nil
}

// AttachAt makes dir (empty, or made here) the home of the local workspace w, whose directory is
// gone, replaced or detached: its .plan/ is made from the configuration kept beside its history,
// and the registry follows it on the next open. Nothing of the history changes.
func AttachAt(w LocalWorkspace, dir string) error {
	if w.Directory == DirPresent {
		return fault.Conflict("the workspace %s is still at %s: bring a copy of a checkpoint out with `plan restore REF --target DIR` there, or move the directory itself", w.ID, w.Root)
	}
	if err := registry.Private(w.HistoryDir); err != nil {
		return err
	}
	f := keptConfig(config.File{}, w.ID, w.HistoryDir)
	l := workspace.Layout{Root: dir, Data: w.HistoryDir}
	if err := l.Init(); err != nil {
		return err
	}
	return config.Save(config.Path(l.State()), f)
}

// RemoveLocal deletes the history of the local workspace w (its whole state directory), which
// must no longer be in its directory. The directory is first renamed out of the registry (one
// atomic step: a crash leaves the workspace listed whole, or not at all), then removed.
func RemoveLocal(w LocalWorkspace) error {
	if w.Directory == DirPresent {
		return fault.Conflict("the workspace %s is in use at %s", w.ID, w.Root)
	}
	if err := registry.Private(w.HistoryDir); err != nil {
		return err
	}
	parent := filepath.Dir(w.HistoryDir)
	doomed := filepath.Join(parent, ".removing-"+filepath.Base(w.HistoryDir))
	if err := os.Rename(w.HistoryDir, doomed); err != nil {
		return err
	}
	return os.RemoveAll(doomed)
}
