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
	"github.com/planhq/plan/tests/testkit/servertest"
)

// Two stores share one database. Each store's view lists its own workspaces, with the database's
// counts (and its record of where a workspace lives when the store's descriptor is gone), and
// finds their checkpoints there; a workspace of the other store is not one of its own, and one of
// its own whose metadata is in its own plan.db is found by its records.
func TestAStoreViewedThroughItsDatabase(t *testing.T) {
	ctx := context.Background()
	db := servertest.Postgres(t)
	dir := t.TempDir()
	store, other := "file://"+dir, "file://"+t.TempDir()
	a, cps := sharedWorkspace(t, store, db, nil, 3)
	empty, _ := sharedWorkspace(t, store, db, nil, 0)
	elsewhere, _ := sharedWorkspace(t, other, db, nil, 1)
	local, localCps := sharedWorkspace(t, store, "", nil, 2)
	if err := os.Remove(filepath.Join(dir, "workspaces", a+".json")); err != nil {
		t.Fatal(err)
	}
	s := openShared(t, bootstrap.SharedConfig{Store: store, DB: db})

	ws, err := s.Workspaces(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]application.WorkspaceSummary{}
	for _, w := range ws {
		got[w.ID] = w
	}
	if len(ws) != 3 || got[local].Checkpoints != 2 || got[a].Checkpoints != 3 || got[a].Root == "" || got[a].Host == "" || got[empty].Checkpoints != 0 {
		t.Fatalf("the store's workspaces, from its database: %+v", ws)
	}
	if _, ok := got[elsewhere]; ok {
		t.Errorf("the other store's workspace %s is listed", elsewhere)
	}

	newest, err := s.Checkpoint(ctx, a, "")
	if err != nil || newest.ID != cps[2] || newest.Workspace != a {
		t.Errorf("the newest checkpoint: %+v, %v (want %s)", newest, err, cps[2])
	}
	byPrefix, err := s.Checkpoint(ctx, a, cps[0][:len(cps[0])-2])
	if err != nil || byPrefix.ID != cps[0] || byPrefix.Root.IsZero() {
		t.Errorf("a checkpoint by its prefix: %+v, %v (want %s)", byPrefix, err, cps[0])
	}
	if _, err := s.Checkpoint(ctx, a, "abcdef0123456789abcdef01"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("an unknown checkpoint: %v", err)
	}
	if _, err := s.Checkpoint(ctx, empty, ""); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("the newest of a workspace without checkpoints: %v", err)
	}
	if _, err := s.Checkpoint(ctx, "0123456789abcdef01234567", ""); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no workspace") {
		t.Errorf("a workspace neither holds: %v", err)
	}
	// Found in the database, it would be cloned onto a store that lacks its content.
	if _, err := s.Checkpoint(ctx, elsewhere, ""); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "holds no workspace") {
		t.Errorf("a workspace of the database whose content is in another store: %v", err)
	}
	if got, err := s.Checkpoint(ctx, local, ""); err != nil || got.ID != localCps[1] {
		t.Errorf("a workspace of the store with its own plan.db: %+v, %v (want %s)", got, err, localCps[1])
	}

	// A database that lost its tables cannot list: an error, not an empty list.
	servertest.Exec(t, db, "DROP TABLE workspaces CASCADE")
	if ws, err := s.Workspaces(ctx, false); err == nil {
		t.Errorf("the workspaces of a database without its tables: %+v", ws)
	}
	if _, err := s.Checkpoint(ctx, a, ""); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a checkpoint in a database without its tables: %v, want an error other than not found", err)
	}
}
