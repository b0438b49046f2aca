package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// A shared store keeps each workspace's high-water mark: every commit raises it to the record's
// number, so deleting the newest records leaves a mark naming what is gone. A private store keeps
// none.
func TestRecordsHead(t *testing.T) {
	root := t.TempDir()
	be := NewDir(root, true)
	const id = "0123456789abcdef01234567"
	r := NewRecords(be, WorkspaceRecords(id))
	if _, ok, err := r.Head(); ok || err != nil {
		t.Fatalf("the mark of a workspace that committed nothing: %v, %v", ok, err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		name, err := r.Prepare(seq, []byte{byte(seq)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(name); err != nil {
			t.Fatal(err)
		}
		// A commit made again (another process's reconcile) keeps the mark.
		if err := r.Commit(name); err != nil {
			t.Fatal(err)
		}
		if head, ok, err := r.Head(); !ok || err != nil || head != seq {
			t.Fatalf("after committing %d: %d, %v, %v", seq, head, ok, err)
		}
	}
	mark := filepath.Join(root, "workspaces", id+".head")
	if err := os.WriteFile(mark, []byte("not a number"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Head(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged mark: %v", err)
	}
	// The mark cannot be written (its directory is a file): the commit says so.
	if err := os.RemoveAll(filepath.Join(root, "workspaces")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "workspaces"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	name, err := r.Prepare(4, []byte{4})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(name); err == nil || !strings.Contains(err.Error(), "newest record") {
		t.Fatalf("a commit whose mark cannot be written: %v", err)
	}
	if _, _, err := r.Head(); err == nil {
		t.Fatal("a mark that cannot be read read as none")
	}
	if err := r.raiseHead("not-a-record"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("raising the mark to a bad name: %v", err)
	}

	// A private store keeps no mark.
	p, err := OpenRecords(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	name, err = p.Prepare(1, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(name); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := p.Head(); ok || err != nil {
		t.Fatalf("a private store's mark: %v, %v", ok, err)
	}
}
