package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/registry"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// InWorkspace is the store a user names to keep a new workspace's state inside it, in .plan/ (as
// before wave 4): `plan init --store workspace`. Such a state does not survive `git clean -fdx`
// or a deleted .plan/ (docs/store.md).
const InWorkspace = "workspace"

// madeDirs are the state directories an Init made, for Open to remove when the graph fails.
type madeDirs struct {
	mu   sync.Mutex
	dirs []string
}

func (m *madeDirs) add(dir string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.dirs = append(m.dirs, dir)
	m.mu.Unlock()
}

func (m *madeDirs) takeBack() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.dirs {
		_ = os.RemoveAll(d)
	}
	m.dirs = nil
}

// registry opens the data directory (creating it when create is set).
func (s *Setup) registry(create bool) (*registry.Registry, error) {
	dir, err := registry.Dir(s.getenv)
	if err != nil {
		return nil, err
	}
	return registry.Open(dir, create)
}

// registryOf is the registry that holds the state directory state (<data>/workspaces/<ID>).
func registryOf(state string) *registry.Registry {
	return &registry.Registry{Root: filepath.Dir(filepath.Dir(state))}
}

// locate points the layout at the state directory the configuration names, after checking it is
// there and private: a configuration whose state directory is missing is a workspace whose
// history cannot be reached here, never one to start afresh.
func (s *Setup) locate() error {
	d := s.File.StateDir
	if d == "" {
		return nil
	}
	if !filepath.IsAbs(d) || filepath.Clean(d) != d {
		return fault.Invalid("%s: state_dir %q: want a clean absolute path", config.Path(s.Layout.State()), d)
	}
	if s.File.WorkspaceID != "" && filepath.Base(d) != s.File.WorkspaceID {
		return fault.Invalid("%s: state_dir %s is not the state directory of workspace %s", config.Path(s.Layout.State()), d, s.File.WorkspaceID)
	}
	if within(d, s.Layout.Root) {
		return fault.Invalid("%s: state_dir %s is inside the workspace: every checkpoint would record it", config.Path(s.Layout.State()), d)
	}
	if err := registry.Private(d); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fault.Integrity("the history of the workspace %s (%s) is not where its .plan/config.yaml says: %s is missing. if the data directory moved, put it back or write its new place into state_dir there; nothing was changed",
				s.Layout.Root, s.File.WorkspaceID, d)
		}
		return err
	}
	s.Layout.Data = d
	return nil
}

// former finds the workspace whose history the data directory keeps for this very directory (same
// path, same directory: `git clean -fdx` or `rm -rf .plan` took its .plan/), or nil. A directory
// made again at that path is a new one: nil, and a Notice naming what was kept. An unreadable
// entry is an error when init would otherwise start a new history: it might have been this
// directory's.
func (s *Setup) former(init bool) (*registry.Entry, error) {
	reg, err := s.registry(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	at, bad, err := reg.At(s.Layout.Root)
	if err != nil {
		return nil, err
	}
	var kept []string
	for i := range at {
		if at[i].Same(s.Layout.Root) {
			return &at[i], nil
		}
		kept = append(kept, at[i].WorkspaceID)
	}
	if len(bad) > 0 && init {
		names := make([]string, len(bad))
		for i, b := range bad {
			names[i] = b.State
		}
		return nil, fault.Integrity("the registry of plan's data directory %s has entries it cannot read (%s: %v): one may be this directory's history, so plan will not start a new one here unseen. Check them (`plan workspaces` lists them), or run `plan init --new` to start an unrelated history anyway",
			reg.Root, strings.Join(names, ", "), bad[0].Err)
	}
	if len(kept) > 0 {
		s.Notice = fmt.Sprintf("a deleted workspace's history is kept for this path (%s): `plan clone --from ID DIR` brings it back; `plan workspaces` lists it", strings.Join(kept, ", "))
	}
	return nil, nil
}

// reattach gives this directory the workspace e back: its .plan/ made again from the copy of the
// configuration kept beside the history (or, without one, from the entry), and the layout pointed
// at its state directory. Nothing of the history is touched.
func (s *Setup) reattach(e registry.Entry) error {
	if err := registry.Private(e.State); err != nil {
		return err
	}
	f := keptConfig(s.File, e.WorkspaceID, e.State)
	s.Layout.Data = e.State
	if err := s.Layout.Init(); err != nil {
		return err
	}
	if err := failpoint.Hit("reattach.dirs"); err != nil {
		return err
	}
	if err := config.Save(config.Path(s.Layout.State()), f); err != nil {
		return err
	}
	if err := failpoint.Hit("reattach.config"); err != nil {
		return err
	}
	s.File, s.Reattached = f, true
	s.Notice = fmt.Sprintf("re-attached %s to its history (workspace %s, kept in %s)", s.Layout.Root, e.WorkspaceID, e.State)
	return nil
}

// makeState makes the state directory of the new workspace id in the data directory, with its
// registry entry.
func (s *Setup) makeState(id string) error {
	if err := ident.ValidateFull("workspace", id); err != nil {
		return fault.Wrap(fault.ErrInvalid, err, "%s", config.Path(s.Layout.State()))
	}
	reg, err := s.registry(true)
	if err != nil {
		return err
	}
	e, err := newEntry(id, s.Layout.Root)
	if err != nil {
		return err
	}
	if old, err := reg.Load(id); err == nil && old.Root == s.Layout.Root && !(workspace.Layout{Root: old.Root, Data: old.State}).Initialized() {
		// An init of this very workspace that stopped before its configuration named its state
		// directory: go on with that one.
		s.Layout.Data = old.State
		return nil
	}
	if err := reg.Make(e); err != nil {
		return err
	}
	s.made.add(reg.StateDir(id))
	s.Layout.Data = reg.StateDir(id)
	return nil
}

// keepCopy keeps the state directory's copy of .plan/config.yaml equal to it (what a re-attach
// gives back): rewritten only when the user or plan changed the file.
func (s *Setup) keepCopy() error {
	if !s.Layout.Outside() {
		return nil
	}
	b, err := os.ReadFile(config.Path(s.Layout.State())) // #nosec G304 -- the workspace's own configuration
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing to keep: the next save writes both
	}
	if err != nil {
		return err
	}
	cp := filepath.Join(s.Layout.Data, registry.ConfigCopy)
	if old, err := os.ReadFile(cp); err == nil && bytes.Equal(old, b) { // #nosec G304 -- plan's own data directory
		return nil
	}
	if err := fsx.Replace(cp, b, true); err != nil {
		return fmt.Errorf("keep a copy of the configuration in %s: %w", s.Layout.Data, err)
	}
	return nil
}

// Former finds the workspace dir is in whose .plan/ is gone while the data directory keeps its
// history for that very directory (`git clean -fdx`, `rm -rf .plan`): its root, or ok false. The
// commands then say which workspace it was (Resolve), and init, or an agent's hook, re-attaches
// it. A directory made again at the old path is not one (registry.Entry.Same).
func Former(dir string, getenv func(string) string) (root string, ok bool) {
	if getenv == nil {
		getenv = os.Getenv
	}
	d, err := registry.Dir(getenv)
	if err != nil {
		return "", false
	}
	reg, err := registry.Open(d, false)
	if err != nil {
		return "", false
	}
	entries, _, err := reg.List()
	if err != nil {
		return "", false
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	best := ""
	for _, e := range entries {
		if !within(dir, e.Root) || len(e.Root) <= len(best) || !e.Same(e.Root) || !registry.Mine(e.Root) {
			continue // not this directory's, or a directory another user owns now: never written into
		}
		if _, err := os.Lstat(filepath.Join(e.Root, workspace.StateDir)); err == nil {
			continue // a workspace still: discovery found it, or refused it for a reason
		}
		best = e.Root
	}
	return best, best != ""
}

// LayoutAt is the layout of the workspace at root with its state directory, as its configuration
// names it (.plan/ itself when it names none, or cannot be read: the open that needs more says
// why).
func LayoutAt(root string) (workspace.Layout, error) {
	l, err := workspace.NewLayout(root)
	if err != nil {
		return l, err
	}
	if f, err := config.Load(config.Path(l.State())); err == nil && f.StateDir != "" && filepath.IsAbs(f.StateDir) {
		l.Data = filepath.Clean(f.StateDir)
	}
	return l, nil
}

// KeepAttached makes .plan/ again, from the copy kept beside the history, when something deleted
// it while the workspace was open (a decision that ran `git clean -fdx`, an agent's `rm -rf
// .plan`); it says whether it had to. A workspace whose state is in .plan/ has nothing to make
// it from.
func (a *App) KeepAttached() (bool, error) {
	s := a.Services.Setup
	l := s.Layout
	if !l.Outside() {
		return false, nil
	}
	if _, err := os.Stat(config.Path(l.State())); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if _, err := os.Stat(l.Root); err != nil {
		return false, fault.NotFound("the workspace directory %s is gone (%v); its history is kept in %s: `plan clone --from %s DIR` brings it back",
			l.Root, err, l.Data, s.WorkspaceID)
	}
	again := func(err error) error {
		return fmt.Errorf("%s/.plan was deleted while this command ran and could not be made again (%w): `plan init` there re-attaches the workspace", l.Root, err)
	}
	if err := l.Init(); err != nil {
		return true, again(err)
	}
	if err := config.Save(config.Path(l.State()), s.File); err != nil {
		return true, again(err)
	}
	s.writeHome()
	return true, nil
}

// newEntry is the registry entry of workspace id made (or moved out) in root now.
func newEntry(id, root string) (registry.Entry, error) {
	host, _ := os.Hostname()
	now := time.Now().UTC()
	e := registry.Entry{WorkspaceID: id, Host: host, CreatedAt: now, AttachedAt: now}
	return e, e.Bind(root)
}

// dataInside says the data directory is inside the workspace (the workspace is the home
// directory, or PLAN_DATA_DIR points into it): a history there would be in every checkpoint of
// the workspace, so it stays in .plan/ instead, and the user hears so.
func (s *Setup) dataInside() (bool, error) {
	dir, err := registry.Dir(s.getenv)
	if err != nil {
		return false, err
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		dir = filepath.Join(r, filepath.Base(dir))
	}
	if !within(dir, s.Layout.Root) {
		return false, nil
	}
	s.Notice = fmt.Sprintf("the data directory %s is inside this workspace, so its history is kept in %s/.plan, which `git clean -fdx` or `rm -rf .plan` would destroy; set %s to a directory outside it for a history out of their reach",
		dir, s.Layout.Root, registry.EnvDataDir)
	return true, nil
}

// formerError is what a command says in root, a directory that lost its .plan/ while the data
// directory keeps its history as workspace e.
func formerError(root string, e registry.Entry) error {
	lost := "its .plan/ is gone"
	if _, err := os.Lstat(filepath.Join(root, workspace.StateDir)); err == nil {
		lost = "its .plan/config.yaml no longer names it"
	}
	return fault.NotFound("%s was the plan workspace %s, and %s; its history is kept in %s: run `plan init` here to re-attach it (or `plan init --new` for a new, unrelated history)",
		root, e.WorkspaceID, lost, e.State)
}

// keptConfig is the configuration a directory attached to the history of workspace id (kept in
// state) gets: current, when it holds settings (a .plan/config.yaml that lost only the identity,
// rewritten by hand), else the copy kept beside the history; either with the identity and the
// state directory given back.
func keptConfig(current config.File, id, state string) config.File {
	f := current
	if f == (config.File{}) {
		var err error
		if f, err = config.Load(filepath.Join(state, registry.ConfigCopy)); err != nil || f.WorkspaceID != id {
			f = config.File{}
		}
	}
	f.WorkspaceID, f.StateDir = id, state
	return f
}
