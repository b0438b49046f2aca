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
)

// Retiring: a workspace is found in the store or not; its directory is live, gone or on another
// machine; once retired it is left out of the list (unless all are asked for), refuses to open,
// and offers only its pinned checkpoints to clone.
func TestRetiringAWorkspace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := "file://" + dir
	root := t.TempDir()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	id := app.WorkspaceID()
	var cps []string
	for _, content := range []string{"one", "two"} {
		if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, string(cp.ID()))
	}
	if _, err := app.Services.Checkpoints.SetPinned(ctx, cps[0], true); err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	s := openShared(t, bootstrap.SharedConfig{Store: store})
	if _, err := s.RetireCheck("bad id"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a malformed ID: %v", err)
	}
	if _, err := s.RetireCheck("0123456789abcdef01234567"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("an unknown ID: %v", err)
	}
	r, err := s.RetireCheck(id)
	if err != nil || r.Liveness != application.Live || r.Already || r.Root == "" {
		t.Fatalf("a live workspace: %+v, %v", r, err)
	}
	if r, err = s.Retire(ctx, r); err != nil || r.Already || r.RetiredAt.IsZero() {
		t.Fatalf("retire: %+v, %v", r, err)
	}
	if again, err := s.RetireCheck(id); err != nil || !again.Already || !again.RetiredAt.Equal(r.RetiredAt) {
		t.Fatalf("checked again: %+v, %v", again, err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "was retired") {
		t.Fatalf("opening a retired workspace: %v", err)
	}
	if ws, err := s.Workspaces(ctx, false); err != nil || len(ws) != 0 {
		t.Fatalf("the list without the retired: %+v, %v", ws, err)
	}
	if ws, err := s.Workspaces(ctx, true); err != nil || len(ws) != 1 || ws[0].RetiredAt.IsZero() || ws[0].Checkpoints != 2 {
		t.Fatalf("the list with the retired: %+v, %v", ws, err)
	}
	if src, err := s.Checkpoint(ctx, id, ""); err != nil || src.ID != cps[0] {
		t.Fatalf("the newest pinned checkpoint of a retired workspace: %+v, %v", src, err)
	}
	if _, err := s.Checkpoint(ctx, id, cps[1]); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "not one of them") {
		t.Fatalf("an unpinned checkpoint of a retired workspace: %v", err)
	}
	// Its directory gone, a workspace on this machine is known gone.
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	if r, err := s.RetireCheck(id); err != nil || r.Liveness != application.Gone {
		t.Fatalf("a workspace whose directory no longer holds it: %+v, %v", r, err)
	}
	// A damaged retirement is refused, by the check and by the workspace's own open.
	if err := os.WriteFile(filepath.Join(dir, "workspaces", id+".retired"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetireCheck(id); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged retirement: %v", err)
	}
	if _, err := s.Checkpoint(ctx, id, ""); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a checkpoint of a workspace whose retirement is damaged: %v", err)
	}
}

// A workspace on another machine is of unknown liveness; a damaged descriptor is refused.
func TestRetireCheckOfOtherMachines(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + dir
	id, _ := sharedWorkspace(t, store, "", nil, 1)
	desc := filepath.Join(dir, "workspaces", id+".json")
	_ = os.Chmod(desc, 0o600)
	if err := os.WriteFile(desc, []byte(`{"workspace_id":"`+id+`","root":"/x","host":"elsewhere"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openShared(t, bootstrap.SharedConfig{Store: store})
	if r, err := s.RetireCheck(id); err != nil || r.Liveness != application.Unknown || r.Host != "elsewhere" {
		t.Fatalf("another machine's workspace: %+v, %v", r, err)
	}
	if err := os.WriteFile(desc, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetireCheck(id); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged descriptor: %v", err)
	}
	if err := os.Remove(desc); err != nil {
		t.Fatal(err)
	}
	r, err := s.RetireCheck(id)
	if err != nil || r.Liveness != application.Unknown || r.Root != "" {
		t.Fatalf("a workspace without a descriptor: %+v, %v", r, err)
	}
	if _, err := s.Retire(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(context.Background(), id, ""); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "it has none") {
		t.Fatalf("a retired workspace without a pinned checkpoint: %v", err)
	}
}

// What the store adapters cannot read is an error, never a guess: a descriptor or a retirement
// that is not a file. A directory that is gone altogether no longer holds its workspace.
func TestRetireThroughAStoreThatCannotBeRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := "file://" + dir
	id, _ := sharedWorkspace(t, store, "", nil, 1)
	host, _ := os.Hostname()
	desc := filepath.Join(dir, "workspaces", id+".json")
	_ = os.Chmod(desc, 0o600)
	if err := os.WriteFile(desc, []byte(`{"workspace_id":"`+id+`","root":"`+filepath.Join(dir, "gone")+`","host":"`+host+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openShared(t, bootstrap.SharedConfig{Store: store})
	r, err := s.RetireCheck(id)
	if err != nil || r.Liveness != application.Gone {
		t.Fatalf("a workspace whose directory is gone: %+v, %v", r, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "workspaces", id+".retired"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retire(ctx, r); err == nil {
		t.Error("a retirement marker that cannot be read: retired anyway")
	}
	if err := os.Remove(desc); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(desc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "workspaces", id+".retired")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetireCheck(id); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a descriptor that cannot be read: %v", err)
	}
}
