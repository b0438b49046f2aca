package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit"
)

// initialised returns a workspace plan init made, closed again.
func initialised(t *testing.T) string {
	t.Helper()
	app, dir := openWorkspace(t)
	closeApp(t, app)
	return dir
}

// A store whose records directory cannot be made (a file stands where it goes) fails Open with the
// cause, and nothing stays open: the database is opened after the records, never before.
func TestOpenRefusesUnusableRecords(t *testing.T) {
	dir := initialised(t)
	records := filepath.Join(objectsOf(t, dir), "records")
	if err := os.RemoveAll(records); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(records, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), records) {
		t.Fatalf("Open with a file for the records directory: %v, want ENOTDIR naming %s", err, records)
	}
	if open := openFiles(t, dir); len(open) != 0 {
		t.Errorf("the failed Open left files open: %q", open)
	}
}

// When the records cannot be made because .plan is not writable (an immutable flag here; a
// read-only mount for a user), the error says so as a conflict the user can act on, not as
// a bare mkdir failure.
func TestOpenReadOnlyStateIsAConflict(t *testing.T) {
	dir := initialised(t)
	l, err := bootstrap.LayoutAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	state, objects := l.Home(), l.Objects()
	if err := os.RemoveAll(filepath.Join(objects, "records")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{state, objects} {
		testkit.Immutable(t, p)
	}
	_, err = bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "make it writable") {
		t.Fatalf("Open of a read-only workspace: %v, want a conflict asking to make .plan writable", err)
	}
	if open := openFiles(t, dir); len(open) != 0 {
		t.Errorf("the failed Open left files open: %q", open)
	}
}
