package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// rollbackOnce changes every file of files, snapshots, and restores the snapshot before; it
// returns the trees before and after the change.
func (w *testWS) rollbackOnce(files ...string) (before, after tree.Hash) {
	w.t.Helper()
	for _, f := range files {
		w.write(f, "before "+f, 0o644)
	}
	before = w.snapshot().Root
	for _, f := range files {
		w.write(f, "after "+f, 0o644)
	}
	after = w.snapshot().Root
	if _, err := w.r.Apply(context.Background(), after, before, nil); err != nil {
		w.t.Fatal(err)
	}
	w.requireTree(w.flatten(before), "after the rollback")
	return before, after
}

func (w *testWS) requireNoTrash() {
	w.t.Helper()
	entries, err := os.ReadDir(filepath.Join(w.root, filepath.FromSlash(w.l.Trash())))
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	if len(entries) > 0 {
		w.t.Fatalf("the trash still holds %d entries", len(entries))
	}
}

// TestRestoreExchangesAndFreesWhatItReplaced: a restore swaps each file it replaces into staging
// (renameat2 RENAME_EXCHANGE) instead of renaming over it, then frees what it swapped out: itself
// when nobody takes it over, never leaving it in the workspace or in .plan/.
func TestRestoreExchangesAndFreesWhatItReplaced(t *testing.T) {
	w := newTestWS(t)
	w.rollbackOnce("a", "d/b", "d/e/c")
	w.requireNoStaging()
	w.requireNoTrash()

	// A trash a stopped watch service left behind is removed by the next restore.
	left := filepath.Join(w.root, filepath.FromSlash(w.l.Trash()), "left")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	w.write(".plan/trash/left/x", "old", 0o644)
	var handed string
	w.r.OnPlaced = func(_ context.Context, _ []Placed, trash string) bool {
		handed = trash
		return true // taken over: the restore leaves it
	}
	w.rollbackOnce("a")
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Fatalf("a leftover trash survived the next restore (%v)", err)
	}
	if handed == "" {
		t.Fatal("no trash was handed over")
	}
	b, err := os.ReadFile(filepath.Join(handed, "0", "0"))
	if err != nil || string(b) != "after a" {
		t.Fatalf("the trash handed over holds %q (%v), want what the restore replaced", b, err)
	}
	if rel, err := filepath.Rel(filepath.Join(w.root, filepath.FromSlash(w.l.Trash())), handed); err != nil || filepath.Dir(rel) != "." {
		t.Fatalf("trash %s is not directly under the trash directory", handed)
	}

	// Nobody to take it over: the restore removes it.
	w.r.OnPlaced = nil
	w.rollbackOnce("a")
	w.requireNoTrash()
	w.requireNoStaging()
}

// TestRetireFailures: when the staging directory cannot be moved to the trash, nothing is handed
// over (the apply's removal of staging frees it).
func TestRetireFailures(t *testing.T) {
	w := newTestWS(t)
	root, err := os.OpenRoot(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	a := &applier{r: w.r, root: root, staging: w.l.Staging()}
	if got := a.retire(); got != "" {
		t.Fatalf("nothing exchanged, yet retired to %q", got)
	}
	a.exchanged.Store(true)
	w.write(".plan/trash", "a file where the trash directory goes", 0o644)
	if got := a.retire(); got != "" {
		t.Fatalf("retired to %q with no trash directory", got)
	}
	w.remove(".plan/trash")
	if got := a.retire(); got != "" { // no staging directory to move
		t.Fatalf("retired a missing staging directory to %q", got)
	}
}

// TestRestoreRenamesWhereItCannotExchange: on a file system without RENAME_EXCHANGE the restore
// renames over the workspace's files, as it always did.
func TestRestoreRenamesWhereItCannotExchange(t *testing.T) {
	var calls atomic.Int32 // the restore places files from several goroutines
	old := renameExchange
	renameExchange = func(int, string, int, string) error { calls.Add(1); return unix.EINVAL }
	t.Cleanup(func() { renameExchange = old })
	w := newTestWS(t)
	w.rollbackOnce("a", "b", "d/c")
	if n := calls.Load(); n == 0 || n > 3 {
		t.Fatalf("exchange was tried %d times, want at least once and at most once per file", n)
	}
	w.requireNoStaging()
	w.requireNoTrash()
}

// TestPutRefusesADirectorySwappedIn: a file the restore replaces that became a directory meanwhile
// is swapped back and refused (a rename over it is refused too); one that vanished is renamed to.
func TestPutRefusesADirectorySwappedIn(t *testing.T) {
	w := newTestWS(t)
	root, err := os.OpenRoot(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	a := &applier{r: w.r, root: root, staging: w.l.Staging()}
	w.write(".plan/staging/0/1", "new", 0o644)
	w.mkdir("d/f", 0o755)
	w.write("d/f/inside", "kept", 0o644)
	file := &tree.Entry{Path: "d/f", Kind: tree.KindFile}
	err = a.put(".plan/staging/0/1", tree.Change{Path: "d/f", From: file, To: file})
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("put over a directory: %v, want a conflict", err)
	}
	if b, err := os.ReadFile(w.abs("d/f/inside")); err != nil || string(b) != "kept" {
		t.Fatalf("the directory was not put back: %q, %v", b, err)
	}
	if b, err := os.ReadFile(w.abs(".plan/staging/0/1")); err != nil || string(b) != "new" {
		t.Fatalf("the staged file was not put back: %q, %v", b, err)
	}
	// Vanished: renamed to its place.
	err = a.put(".plan/staging/0/1", tree.Change{Path: "d/g", From: file, To: file})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(w.abs("d/g")); err != nil || string(b) != "new" {
		t.Fatalf("a file whose old version vanished was not put in place: %q, %v", b, err)
	}
	// Directories that cannot be opened.
	if err := a.put(".plan/staging/9/1", tree.Change{Path: "d/g", From: file, To: file}); err == nil {
		t.Fatal("put from a missing staging directory succeeded")
	}
	w.write(".plan/staging/0/2", "new", 0o644)
	if err := a.put(".plan/staging/0/2", tree.Change{Path: "missing/g", From: file, To: file}); err == nil {
		t.Fatal("put into a missing directory succeeded")
	}
}
