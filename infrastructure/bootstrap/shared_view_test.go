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
	"github.com/planhq/plan/tests/testkit"
)

// sharedWorkspace makes a workspace on the shared store (and database, if db is set) with n
// checkpoints, and returns its ID and the checkpoints' IDs, oldest first.
func sharedWorkspace(t *testing.T, store, db string, getenv func(string) string, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: store, DB: db, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	var ids []string
	for i := range n {
		if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(strings.Repeat("x", i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(cp.ID()))
	}
	return app.WorkspaceID(), ids
}

func openShared(t *testing.T, cfg bootstrap.SharedConfig) *application.SharedStoreService {
	t.Helper()
	s, closeStore, err := bootstrap.OpenShared(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return s
}

// The store's listing ignores what is not a workspace's (stray files, directories, names that are
// no workspace ID), lists a workspace whose descriptor is gone by its records, and refuses a
// descriptor that is damaged.
func TestTheWorkspacesOfAStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := "file://" + dir
	a, _ := sharedWorkspace(t, store, "", nil, 2)
	b, _ := sharedWorkspace(t, store, "", nil, 0)
	for _, junk := range []string{"workspaces/README", "workspaces/not-an-id.json", "records/README"} {
		if err := os.WriteFile(filepath.Join(dir, junk), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, junk := range []string{"workspaces/sub.json", "records/not-an-id"} {
		if err := os.MkdirAll(filepath.Join(dir, junk), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "workspaces", a+".json")); err != nil {
		t.Fatal(err)
	}
	s := openShared(t, bootstrap.SharedConfig{Store: store})
	ws, err := s.Workspaces(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]application.WorkspaceSummary{}
	for _, w := range ws {
		got[w.ID] = w
	}
	if len(ws) != 2 || got[a].Checkpoints != 2 || got[a].Root != "" || got[a].LastCheckpointAt.IsZero() ||
		got[b].Checkpoints != 0 || got[b].Root == "" || got[b].Host == "" {
		t.Fatalf("the workspaces of the store: %+v", ws)
	}

	if err := os.WriteFile(filepath.Join(dir, "workspaces", b+".json"), []byte(`{"workspace_id": "0123456789abcdef01234567"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Workspaces(ctx, false); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), b+".json") {
		t.Errorf("a descriptor naming another workspace: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspaces", b+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Workspaces(ctx, false); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a descriptor that is not JSON: %v", err)
	}
}

// A store whose listings fail, or whose records are damaged, says so: it never lists fewer
// workspaces or checkpoints than it holds.
func TestAStoreThatCannotBeListed(t *testing.T) {
	ctx := context.Background()
	for _, sub := range []string{"workspaces", "records"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, sub), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s := openShared(t, bootstrap.SharedConfig{Store: "file://" + dir})
		if _, err := s.Workspaces(ctx, false); err == nil || !strings.Contains(err.Error(), sub) {
			t.Errorf("a store whose %s is a file: %v", sub, err)
		}
	}

	dir := t.TempDir()
	store := "file://" + dir
	id, _ := sharedWorkspace(t, store, "", nil, 1)
	records := filepath.Join(dir, "records", id)
	des, err := os.ReadDir(records)
	if err != nil || len(des) == 0 {
		t.Fatalf("the workspace's records: %v %v", des, err)
	}
	for _, de := range des {
		if !de.IsDir() {
			if err := os.WriteFile(filepath.Join(records, de.Name()), []byte("damaged"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := openShared(t, bootstrap.SharedConfig{Store: store})
	if _, err := s.Workspaces(ctx, false); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), id) {
		t.Errorf("a workspace with damaged records: %v", err)
	}
	if _, err := s.Checkpoint(ctx, id, ""); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a checkpoint of a workspace with damaged records: %v", err)
	}
	if err := os.RemoveAll(records); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(records, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(ctx, id, ""); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a checkpoint of a workspace whose records cannot be listed: %v", err)
	}
}

// A checkpoint is found by its full ID or a unique prefix, the newest when none is named; a prefix
// two share is ambiguous, and a workspace without checkpoints has no newest.
func TestFindingACheckpointInTheRecords(t *testing.T) {
	ctx := context.Background()
	store := "file://" + t.TempDir()
	id, cps := sharedWorkspace(t, store, "", nil, 3)
	empty, _ := sharedWorkspace(t, store, "", nil, 0)
	s := openShared(t, bootstrap.SharedConfig{Store: store})

	got, err := s.Checkpoint(ctx, id, "")
	if err != nil || got.ID != cps[2] || got.Workspace != id || got.CreatedAt.IsZero() {
		t.Fatalf("the newest: %+v, %v (want %s)", got, err, cps[2])
	}
	for _, ref := range []string{cps[0], cps[1][:len(cps[1])-1]} {
		got, err := s.Checkpoint(ctx, id, ref)
		if err != nil || !strings.HasPrefix(got.ID, ref) {
			t.Errorf("checkpoint %s: %+v, %v", ref, got, err)
		}
	}
	shared := commonPrefix(cps[0], cps[1])
	if len(shared) >= 4 {
		_, err := s.Checkpoint(ctx, id, shared)
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), cps[0]) {
			t.Errorf("a prefix two checkpoints share: %v", err)
		}
	} else {
		t.Logf("the checkpoints share no prefix long enough to be one (%q): ambiguity not checked", shared)
	}
	if _, err := s.Checkpoint(ctx, id, "abcdef0123456789abcdef01"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("an unknown checkpoint: %v", err)
	}
	// A workspace whose records hold no checkpoint (made, nothing taken yet).
	if _, err := s.Checkpoint(ctx, empty, ""); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("the newest of a workspace without checkpoints: %v", err)
	}
}

func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// A clone's directory: made when missing; refused when it cannot be made or looked at.
func TestCloneDirectories(t *testing.T) {
	parent := t.TempDir()
	fresh := filepath.Join(parent, "a", "b")
	if err := bootstrap.EmptyDir(fresh); err != nil {
		t.Fatalf("a directory to make: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || !fi.IsDir() {
		t.Fatalf("it was not made: %v", err)
	}
	if err := bootstrap.EmptyDir(fresh); err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	frozen := t.TempDir()
	testkit.Immutable(t, frozen)
	if err := bootstrap.EmptyDir(filepath.Join(frozen, "copy")); err == nil || !strings.Contains(err.Error(), "create") {
		t.Errorf("below a directory that cannot be written: %v", err)
	}
	loop := filepath.Join(parent, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.EmptyDir(loop); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "cannot be cloned into") {
		t.Errorf("a symlink loop: %v", err)
	}
}

// Opening a store's view fails cleanly: an unusable URL, a bucket that cannot be reached, no
// temporary directory for its cache, a database that does not answer; and leaves no temporary
// directory behind.
func TestOpenSharedFailures(t *testing.T) {
	ctx := context.Background()
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "ftp://x"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("an unusable store URL: %v", err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	noCreds := func(string) string { return "" }
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "s3://plan-nowhere", Getenv: noCreds}); !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("a bucket without credentials: %v", err)
	}
	if des, _ := os.ReadDir(tmp); len(des) != 0 {
		t.Errorf("a failed open left %d temporary entries", len(des))
	}
	t.Setenv("TMPDIR", filepath.Join(tmp, "gone"))
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "s3://plan-nowhere", Getenv: noCreds}); err == nil || errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("no temporary directory for the cache: %v", err)
	}
	t.Setenv("TMPDIR", tmp)

	closed := testkit.ClosedPort(t)
	_, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "file://" + t.TempDir(), DB: "postgres://plan@" + closed + "/plan?connect_timeout=2"})
	if !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("a database that does not answer: %v", err)
	}
}
