package bootstrap

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/registry"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// homeFile, in .plan/, binds the workspace's identity to its directory: the root it was made (or
// last opened) in. A .plan/ copied along with its project (cp -a, rsync) carries its original's
// workspace ID; on a shared store or a shared database the two would write one history, and one's
// deletions and gc would destroy checkpoints the other still lists. Every open compares the file
// with where it is (see checkHome).
const homeFile = "home"

// home is what homeFile holds.
type home struct {
	Root        string `json:"root"`
	WorkspaceID string `json:"workspace_id"`
}

// bound says whether the workspace's identity is shared with anything outside its directory: a
// shared store (its records are kept by workspace ID) or a PostgreSQL database (its rows are). A
// copy of a private workspace on its own SQLite database is a workspace of its own.
func (s *Setup) bound() bool {
	kind, _ := config.DBKind(s.File.DB)
	return s.WorkspaceID != "" && (s.Shared() || kind == "postgres" || s.Layout.Outside())
}

// checkHome refuses (fault.ErrConflict) a workspace whose .plan/ is a copy of one still in use
// elsewhere: the directory homeFile names is another, and it holds a workspace with the same
// ID. A workspace moved (nothing with its ID where it was) is bound to its new directory. It is
// called before anything is written.
func (s *Setup) checkHome() error {
	if !s.bound() {
		return nil
	}
	l := s.Layout
	var h home
	if b, err := os.ReadFile(filepath.Join(l.State(), homeFile)); err == nil { // #nosec G304 -- the workspace's own state
		_ = json.Unmarshal(b, &h) // a damaged file is rewritten, as a missing one
	}
	entry, err := s.entry()
	if err != nil {
		return err
	}
	if h.Root == l.Root && h.WorkspaceID == s.WorkspaceID && (entry == nil || entry.Root == l.Root && entry.Same(l.Root)) {
		return nil
	}
	for _, was := range []string{h.Root, entryRoot(entry)} {
		if was == "" || was == l.Root || (was == h.Root && h.WorkspaceID != s.WorkspaceID) {
			continue
		}
		if err := s.notCopyOf(was); err != nil {
			return err
		}
	}
	s.writeHome()
	return s.bindEntry(entry)
}

// notCopyOf refuses this workspace when the directory was still holds a workspace with its ID:
// this one is a copy of it.
func (s *Setup) notCopyOf(was string) error {
	l := s.Layout
	orig, err := workspace.NewLayout(was)
	if err != nil {
		orig = workspace.Layout{} // nothing there: no original, so no copy of one
	}
	if orig.Root == "" || sameFile(orig.State(), l.State()) {
		return nil
	}
	if f, err := config.Load(config.Path(orig.State())); err == nil && f.WorkspaceID == s.WorkspaceID {
		return fault.Conflict("%s is a copy of the workspace in %s (its .plan/ was copied, with workspace ID %s): both would write one history into %s, and one's deletions and gc would destroy checkpoints the other still lists; nothing was changed. To make the copy a workspace of its own, remove %s and run `plan init%s` there (its files stay; its history starts afresh)",
			l.Root, orig.Root, s.WorkspaceID, s.sharedWith(), l.State(), s.initArgs())
	}
	return nil
}

// entry reads the registry entry of a workspace whose state is outside it (nil for one whose
// state is in .plan/, or whose entry is missing: bindEntry writes it). A damaged entry is
// rewritten: the workspace opening here is what it should say.
func (s *Setup) entry() (*registry.Entry, error) {
	if !s.Layout.Outside() {
		return nil, nil
	}
	e, err := registryOf(s.Layout.Data).Load(s.WorkspaceID)
	switch {
	case err == nil:
		return &e, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fault.ErrIntegrity):
		return nil, nil
	}
	return nil, err
}

func entryRoot(e *registry.Entry) string {
	if e == nil {
		return ""
	}
	return e.Root
}

// bindEntry records in the registry that the workspace is in this directory (made, moved or
// re-attached here).
func (s *Setup) bindEntry(old *registry.Entry) error {
	if !s.Layout.Outside() {
		return nil
	}
	now := time.Now().UTC()
	e := registry.Entry{WorkspaceID: s.WorkspaceID, CreatedAt: now}
	if old != nil {
		e = *old
	}
	if err := e.Bind(s.Layout.Root); err != nil {
		return err
	}
	e.AttachedAt = now
	e.Host, _ = os.Hostname()
	return registryOf(s.Layout.Data).Save(e)
}

// sharedWith names what the workspace's identity is shared with, for messages.
func (s *Setup) sharedWith() string {
	if s.Shared() {
		return "the store " + s.File.Store
	}
	if s.Layout.Outside() {
		return "the state directory " + s.Layout.Data
	}
	return "the database " + s.File.DB
}

// initArgs are the options that make a new workspace on the same store and database.
func (s *Setup) initArgs() string {
	out := ""
	if s.File.Store != "" {
		out += " --store " + s.File.Store
	}
	if s.File.DB != "" {
		out += " --db " + s.File.DB
	}
	return out
}

// writeHome binds the workspace to its directory. Best effort: a .plan/ that cannot be written
// is reported by whatever command writes there next, and checked again on the next open.
func (s *Setup) writeHome() {
	b, _ := json.Marshal(home{Root: s.Layout.Root, WorkspaceID: s.WorkspaceID}) // strings only: it cannot fail
	_ = fsx.Replace(filepath.Join(s.Layout.State(), homeFile), append(b, '\n'), true)
}

// sameFile says whether a and b are the same directory (reached by two paths, a bind mount say).
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
