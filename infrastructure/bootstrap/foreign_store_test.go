package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// A new workspace on a directory that holds another product's files is refused (invalid input),
// before anything is written there or in the workspace; on an existing plan store it is not.
func TestInitRefusesAStoreThatIsNotPlans(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	theirs := filepath.Join(store, "config")
	if err := os.WriteFile(theirs, []byte("their settings\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + store})
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "neither empty nor a plan store") {
		t.Fatalf("init on another product's directory: %v", err)
	}
	if des, _ := os.ReadDir(store); len(des) != 1 {
		t.Fatalf("init wrote into the refused store: %v", des)
	}
	if _, err := os.Stat(filepath.Join(root, ".plan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused init left .plan behind: %v", err)
	}
	if err := os.Remove(theirs); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + store})
	if err != nil {
		t.Fatalf("init on an empty directory: %v", err)
	}
	_ = app.Close()
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: t.TempDir(), Init: true, Store: "file://" + store})
	if err != nil {
		t.Fatalf("a second workspace on the plan store: %v", err)
	}
	_ = app.Close()
}
