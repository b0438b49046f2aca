package bootstrap_test

import (
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// copyDir copies src to dst as `cp -a` does.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := osexec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
}

// A workspace on a shared store copied with its .plan/ is refused before it writes anything, for
// commands and doctor alike, naming the original and the way to a workspace of its own; the
// original goes on; a workspace moved (nothing with its ID left where it was) is bound to its new
// directory.
func TestACopiedWorkspaceIsRefused(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	orig, store := filepath.Join(base, "orig"), "file://"+filepath.Join(base, "store")
	if err := os.Mkdir(orig, 0o700); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: orig, Init: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	cp := filepath.Join(base, "copy")
	copyDir(t, orig, cp)
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: cp})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "is a copy of the workspace in "+orig) ||
		!strings.Contains(err.Error(), "plan init --store "+store) {
		t.Fatalf("open of the copy: %v", err)
	}
	if _, err := bootstrap.Inspect(cp, nil); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("doctor's view of the copy: %v", err)
	}
	if app, err := bootstrap.Open(ctx, bootstrap.Config{Root: orig}); err != nil {
		t.Fatalf("the original after the copy: %v", err)
	} else {
		_ = app.Close()
	}
	// The original moves away: the copy is now the workspace, and binds to its directory.
	moved := filepath.Join(base, "moved")
	if err := os.Rename(orig, moved); err != nil {
		t.Fatal(err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: cp})
	if err != nil {
		t.Fatalf("the copy once the original is gone from its place: %v", err)
	}
	_ = app.Close()
	b, err := os.ReadFile(filepath.Join(cp, ".plan", "home"))
	if err != nil || !strings.Contains(string(b), `"root":"`+cp+`"`) {
		t.Fatalf("the copy's binding: %s, %v", b, err)
	}
}

// Reaching the workspace by another path to the same directory is no copy; a damaged binding is
// made again; a private workspace kept in .plan/ on its own SQLite database is not bound at all
// (a copy of it is a workspace of its own), while one whose history is in the data directory is
// (a copy would write into the same state directory).
func TestWorkspaceBindingEdges(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: ws, Init: true, Store: "file://" + filepath.Join(base, "store")})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	link := filepath.Join(base, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	homeFile := filepath.Join(ws, ".plan", "home")
	b, err := os.ReadFile(homeFile)
	if err != nil {
		t.Fatal(err)
	}
	// Bound under the link's path (as a bind mount would show it): still the same directory.
	if err := os.WriteFile(homeFile, []byte(strings.Replace(string(b), ws, link, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: ws}); err != nil {
		t.Fatalf("the same directory bound under another path: %v", err)
	}
	if err := os.WriteFile(homeFile, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: ws}); err != nil {
		t.Fatalf("a damaged binding: %v", err)
	}
	if b, err := os.ReadFile(homeFile); err != nil || !strings.Contains(string(b), ws) {
		t.Fatalf("the binding made again: %s, %v", b, err)
	}

	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: private, Init: true, Store: bootstrap.InWorkspace})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	copyDir(t, private, filepath.Join(base, "private-copy"))
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: filepath.Join(base, "private-copy")}); err != nil {
		t.Fatalf("a copy of a private workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(private, ".plan", "home")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a private workspace was bound: %v", err)
	}

	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: outside, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	history := app.Services.Layout.Home()
	_ = app.Close()
	copyDir(t, outside, filepath.Join(base, "outside-copy"))
	_, err = bootstrap.Resolve(bootstrap.Config{Root: filepath.Join(base, "outside-copy")})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "the state directory "+history) {
		t.Fatalf("a copy of a workspace whose history is in the data directory: %v", err)
	}
}

// A workspace whose rows are in a PostgreSQL database is bound too, even on its private store: a
// copy would share its rows. (Resolve reads the configuration only: no server is needed.)
func TestACopyOnASharedDatabaseIsRefused(t *testing.T) {
	base := t.TempDir()
	orig := filepath.Join(base, "orig")
	dsn := "postgres://plan@127.0.0.1:1/plan"
	writeConfig(t, orig, "workspace_id: 0123456789abcdef01234567\ndb: "+dsn+"\n")
	if _, err := bootstrap.Resolve(bootstrap.Config{Root: orig}); err != nil {
		t.Fatal(err)
	}
	copyDir(t, orig, filepath.Join(base, "copy"))
	_, err := bootstrap.Resolve(bootstrap.Config{Root: filepath.Join(base, "copy")})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "the database "+dsn) || !strings.Contains(err.Error(), "plan init --db "+dsn) {
		t.Fatalf("a copy on a shared database: %v", err)
	}
}
