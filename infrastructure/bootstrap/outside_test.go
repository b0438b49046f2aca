package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/config"
)

// dataEnv is an environment whose data directory is dir.
func dataEnv(dir string) func(string) string {
	return func(k string) string {
		if k == "PLAN_DATA_DIR" {
			return dir
		}
		return ""
	}
}

type outside struct {
	t      *testing.T
	data   string
	getenv func(string) string
}

func newOutside(t *testing.T) *outside {
	d := filepath.Join(t.TempDir(), "data")
	return &outside{t: t, data: d, getenv: dataEnv(d)}
}

// init makes (or re-attaches) the workspace at root, with a checkpoint when note is set.
func (o *outside) init(root, note string, extra ...func(*bootstrap.Config)) *bootstrap.Setup {
	o.t.Helper()
	cfg := bootstrap.Config{Root: root, Init: true, Getenv: o.getenv}
	for _, f := range extra {
		f(&cfg)
	}
	app, err := bootstrap.Open(context.Background(), cfg)
	if err != nil {
		o.t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	if note != "" {
		if _, err := app.Services.Checkpoints.Create(context.Background(), application.CreateRequest{Note: note}); err != nil {
			o.t.Fatal(err)
		}
	}
	return app.Services.Setup
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestANewWorkspaceKeepsItsHistoryOutside(t *testing.T) {
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	s := o.init(root, "first")
	l := s.Layout
	if !l.Outside() || !strings.HasPrefix(l.Home(), o.data) || filepath.Base(l.Home()) != s.WorkspaceID {
		t.Fatalf("layout %+v: want the history in %s/workspaces/%s", l, o.data, s.WorkspaceID)
	}
	for _, p := range []string{l.Database(), l.Objects(), filepath.Join(l.Home(), "workspace.json"), filepath.Join(l.Home(), "config.yaml")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%v", err)
		}
	}
	for _, p := range []string{"plan.db", "objects"} {
		if _, err := os.Stat(filepath.Join(root, ".plan", p)); !os.IsNotExist(err) {
			t.Errorf(".plan/%s is in the workspace: %v", p, err)
		}
	}
	if got, err := bootstrap.LayoutAt(root); err != nil || got.Home() != l.Home() {
		t.Fatalf("LayoutAt = %+v, %v", got, err)
	}
	// An edit by hand is copied beside the history by the next open.
	cfg := config.Path(filepath.Join(root, ".plan"))
	b, _ := os.ReadFile(cfg)
	edited := []byte(string(b) + "validate:\n  command: \"true\"\n")
	if err := os.WriteFile(cfg, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(filepath.Join(l.Home(), "config.yaml")); string(kept) != string(edited) {
		t.Fatalf("the configuration's copy after an edit: %q", kept)
	}
	// An init asking for the in-workspace store of a workspace whose history is outside: refused.
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Init: true, Store: bootstrap.InWorkspace, Getenv: o.getenv}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("init --store workspace of a workspace whose history is outside: %v", err)
	}
}

func TestALostStateDirIsReattached(t *testing.T) {
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	first := o.init(root, "first")
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	_, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), first.WorkspaceID) {
		t.Fatalf("a command in a directory that lost its .plan/: %v", err)
	}
	if _, err := bootstrap.Inspect(root, o.getenv); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), first.WorkspaceID) {
		t.Fatalf("doctor in a directory that lost its .plan/: %v", err)
	}
	mkdir(t, filepath.Join(root, ".plan"))
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv}); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no longer names it") {
		t.Fatalf("a command where .plan/ lost its configuration: %v", err)
	}
	// A configuration rewritten by hand without the identity keeps its settings when init gives
	// the identity back.
	if err := os.WriteFile(config.Path(filepath.Join(root, ".plan")), []byte("retention:\n  keep: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kept := o.init(root, "")
	if !kept.Reattached || kept.WorkspaceID != first.WorkspaceID || kept.File.Retention == nil || kept.File.Retention.Keep == nil || *kept.File.Retention.Keep != 2 {
		t.Fatalf("re-attach of a configuration that lost its identity: %+v", kept.File)
	}
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	sub := mkdir(t, filepath.Join(root, "a", "b"))
	if got, ok := bootstrap.Former(sub, o.getenv); !ok || got != root {
		t.Fatalf("Former(%s) = %q, %v", sub, got, ok)
	}
	if _, ok := bootstrap.Former(t.TempDir(), o.getenv); ok {
		t.Fatal("Former found a workspace for an unrelated directory")
	}
	// Re-attached even without the configuration's copy: the entry names the workspace.
	if err := os.Remove(filepath.Join(first.Layout.Home(), "config.yaml")); err != nil {
		t.Fatal(err)
	}
	again := o.init(root, "")
	if !again.Reattached || again.WorkspaceID != first.WorkspaceID || !strings.Contains(again.Notice, "re-attached") {
		t.Fatalf("init after .plan/ was lost: %+v", again)
	}
	if _, ok := bootstrap.Former(root, o.getenv); ok {
		t.Fatal("Former found a workspace that has its .plan/")
	}
	// --new starts another history there.
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	fresh := o.init(root, "", func(c *bootstrap.Config) { c.NewHistory = true })
	if fresh.WorkspaceID == first.WorkspaceID || fresh.Reattached || !fresh.Created {
		t.Fatalf("init --new: %+v", fresh)
	}
}

func TestANewDirectoryAtAnOldPathIsANewWorkspace(t *testing.T) {
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	old := o.init(root, "first")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	mkdir(t, root)
	if _, ok := bootstrap.Former(root, o.getenv); ok {
		t.Fatal("a directory made again at the path was taken for the deleted one")
	}
	s := o.init(root, "")
	if s.WorkspaceID == old.WorkspaceID || !s.Created || !strings.Contains(s.Notice, old.WorkspaceID) {
		t.Fatalf("init in a new directory at an old workspace's path: %+v", s)
	}
	ws, err := bootstrap.LocalWorkspaces(context.Background(), o.getenv)
	if err != nil || len(ws) != 2 {
		t.Fatalf("LocalWorkspaces = %+v, %v", ws, err)
	}
	for _, w := range ws {
		want := bootstrap.DirPresent
		if w.ID == old.WorkspaceID {
			want = bootstrap.DirReplaced
		}
		if w.Directory != want || w.Bytes == 0 || !w.Counted {
			t.Errorf("%s: %+v, want %s", w.ID, w, want)
		}
	}
}

func TestLocalWorkspacesAttachAndRemove(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	base := t.TempDir()
	gone := mkdir(t, filepath.Join(base, "gone"))
	detached := mkdir(t, filepath.Join(base, "detached"))
	present := mkdir(t, filepath.Join(base, "present"))
	g, d, p := o.init(gone, "g"), o.init(detached, "d"), o.init(present, "p")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(detached, ".plan")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Layout.Home(), "..", "cccccccccccccccccccccccc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := mkdir(t, filepath.Join(o.data, "workspaces", "dddddddddddddddddddddddd"))
	if err := os.Chmod(damaged, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, "workspace.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := bootstrap.LocalWorkspaces(ctx, o.getenv)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, w := range ws {
		dirs[w.ID] = w.Directory
	}
	want := map[string]string{g.WorkspaceID: bootstrap.DirGone, d.WorkspaceID: bootstrap.DirDetached, p.WorkspaceID: bootstrap.DirPresent,
		"dddddddddddddddddddddddd": bootstrap.DirDamaged}
	for id, dir := range want {
		if dirs[id] != dir {
			t.Errorf("%s: %q, want %q (%v)", id, dirs[id], dir, dirs)
		}
	}
	// A damaged entry keeps a new history from starting unseen where no .plan/ is.
	fresh := mkdir(t, filepath.Join(base, "fresh"))
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: fresh, Init: true, Getenv: o.getenv}); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "--new") {
		t.Fatalf("init beside a damaged registry entry: %v", err)
	}
	for ref, kind := range map[string]error{"abc": fault.ErrInvalid, "ffffffffffff": fault.ErrNotFound, "dddddddddddd": fault.ErrIntegrity, "01": fault.ErrInvalid} {
		if _, err := bootstrap.FindLocal(ctx, o.getenv, ref); !errors.Is(err, kind) {
			t.Errorf("FindLocal(%q): %v, want %v", ref, err, kind)
		}
	}
	if err := os.RemoveAll(damaged); err != nil {
		t.Fatal(err)
	}
	w, err := bootstrap.FindLocal(ctx, o.getenv, g.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	back := mkdir(t, filepath.Join(base, "back"))
	if err := bootstrap.AttachAt(w, back); err != nil {
		t.Fatal(err)
	}
	if l, err := bootstrap.LayoutAt(back); err != nil || l.Home() != g.Layout.Home() {
		t.Fatalf("the directory attached: %+v, %v", l, err)
	}
	pw, err := bootstrap.FindLocal(ctx, o.getenv, p.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.AttachAt(pw, mkdir(t, filepath.Join(base, "x"))); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("attaching a workspace still in its directory: %v", err)
	}
	if err := bootstrap.RemoveLocal(pw); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("removing a workspace still in its directory: %v", err)
	}
	dw, err := bootstrap.FindLocal(ctx, o.getenv, d.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.RemoveLocal(dw); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Layout.Home()); !os.IsNotExist(err) {
		t.Fatalf("the removed history is still there: %v", err)
	}
	if _, err := bootstrap.FindLocal(ctx, o.getenv, d.WorkspaceID); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a removed workspace is still found: %v", err)
	}
	// No data directory at all: nothing listed.
	if ws, err := bootstrap.LocalWorkspaces(ctx, dataEnv(filepath.Join(base, "none"))); err != nil || len(ws) != 0 {
		t.Fatalf("LocalWorkspaces without a data directory: %v, %v", ws, err)
	}
}

func TestKeepAttached(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	o.init(root, "")
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Getenv: o.getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	if again, err := app.KeepAttached(); again || err != nil {
		t.Fatalf("KeepAttached of an attached workspace: %v, %v", again, err)
	}
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	if again, err := app.KeepAttached(); !again || err != nil {
		t.Fatalf("KeepAttached after .plan/ was deleted: %v, %v", again, err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv}); err != nil {
		t.Fatalf("the workspace after KeepAttached: %v", err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := app.KeepAttached(); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "plan clone --from") {
		t.Fatalf("KeepAttached of a deleted workspace: %v", err)
	}
	legacy := mkdir(t, filepath.Join(t.TempDir(), "legacy"))
	lapp, err := bootstrap.Open(ctx, bootstrap.Config{Root: legacy, Init: true, Store: bootstrap.InWorkspace, Getenv: o.getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lapp.Close() }()
	if lapp.Services.Layout.Outside() {
		t.Fatal("--store workspace put the history outside")
	}
	if again, err := lapp.KeepAttached(); again || err != nil {
		t.Fatalf("KeepAttached of a workspace kept in .plan/: %v, %v", again, err)
	}
}

func TestStateDirRefusals(t *testing.T) {
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	s := o.init(root, "")
	cfg := config.Path(filepath.Join(root, ".plan"))
	write := func(state string) {
		t.Helper()
		if err := config.Save(cfg, config.File{WorkspaceID: s.WorkspaceID, StateDir: state}); err != nil {
			t.Fatal(err)
		}
	}
	for state, kind := range map[string]error{
		"relative/x": fault.ErrInvalid,
		filepath.Join(o.data, "workspaces", "0123456789abcdef01234567"): fault.ErrInvalid, // another workspace's
		filepath.Join(root, "inside", s.WorkspaceID):                    fault.ErrInvalid,
		filepath.Join(t.TempDir(), s.WorkspaceID):                       fault.ErrIntegrity, // missing
	} {
		write(state)
		if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv}); !errors.Is(err, kind) {
			t.Errorf("state_dir %s: %v, want %v", state, err, kind)
		}
	}
	write(s.Layout.Home())
	if err := os.Chmod(s.Layout.Home(), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: root, Getenv: o.getenv}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("a state directory open to others: %v", err)
	}
	// A malformed workspace ID never names a directory.
	bad := mkdir(t, filepath.Join(t.TempDir(), "bad"))
	mkdir(t, filepath.Join(bad, ".plan"))
	if err := os.WriteFile(config.Path(filepath.Join(bad, ".plan")), []byte("workspace_id: ../../x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: bad, Init: true, Getenv: o.getenv}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a malformed workspace ID: %v", err)
	}
	// A data directory that cannot be made: init fails and leaves nothing behind.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	nowhere := mkdir(t, filepath.Join(t.TempDir(), "nowhere"))
	if _, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: nowhere, Init: true, Getenv: dataEnv(filepath.Join(file, "data"))}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("init with a data directory that cannot be made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(nowhere, ".plan")); !os.IsNotExist(err) {
		t.Errorf("a failed init left .plan/: %v", err)
	}
	if _, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: nowhere, Init: true, Getenv: dataEnv("relative")}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a relative PLAN_DATA_DIR: %v", err)
	}
}

func TestMoveOut(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := o.init(root, "first", func(c *bootstrap.Config) { c.Store = bootstrap.InWorkspace })
	if s.Layout.Outside() {
		t.Fatal("--store workspace put the history outside")
	}
	res, err := bootstrap.MoveOut(ctx, root, o.getenv)
	if err != nil || res.Already || res.Files == 0 || res.Bytes == 0 || filepath.Base(res.To) != s.WorkspaceID {
		t.Fatalf("MoveOut = %+v, %v", res, err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Getenv: o.getenv})
	if err != nil {
		t.Fatal(err)
	}
	cps, err := app.Services.Checkpoints.List(ctx)
	_ = app.Close()
	if err != nil || len(cps) != 1 || !app.Services.Layout.Outside() {
		t.Fatalf("after the move: %d checkpoints, %v, outside %v", len(cps), err, app.Services.Layout.Outside())
	}
	if res, err := bootstrap.MoveOut(ctx, root, o.getenv); err != nil || !res.Already || res.Resumed {
		t.Fatalf("MoveOut again = %+v, %v", res, err)
	}
	// Leftovers of a move cut after its commit are removed by the next one.
	mkdir(t, filepath.Join(root, ".plan", "objects"))
	if res, err := bootstrap.MoveOut(ctx, root, o.getenv); err != nil || !res.Already || !res.Resumed {
		t.Fatalf("MoveOut with leftovers = %+v, %v", res, err)
	}
	// A partial copy of a move cut before its commit is discarded, and the move starts again.
	legacy := mkdir(t, filepath.Join(t.TempDir(), "legacy"))
	ls := o.init(legacy, "x", func(c *bootstrap.Config) { c.Store = bootstrap.InWorkspace })
	partial := filepath.Join(o.data, "workspaces", ls.WorkspaceID)
	mkdir(t, partial)
	if err := os.WriteFile(filepath.Join(partial, ".moving"), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := bootstrap.MoveOut(ctx, legacy, o.getenv); err != nil || !res.Resumed || res.Already {
		t.Fatalf("MoveOut over a partial copy = %+v, %v", res, err)
	}
	// Another workspace's state directory is never overwritten.
	other := mkdir(t, filepath.Join(t.TempDir(), "other"))
	os2 := o.init(other, "x", func(c *bootstrap.Config) { c.Store = bootstrap.InWorkspace })
	mkdir(t, filepath.Join(o.data, "workspaces", os2.WorkspaceID))
	if _, err := bootstrap.MoveOut(ctx, other, o.getenv); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("MoveOut onto an existing state directory: %v", err)
	}
	if _, err := bootstrap.MoveOut(ctx, t.TempDir(), o.getenv); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("MoveOut outside a workspace: %v", err)
	}
}
