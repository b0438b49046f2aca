package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// Each way the record directory can fail is an error naming it, never a silent success: a record
// that was not durably written must not let its transaction commit.
func TestRecordsFaults(t *testing.T) {
	dir := t.TempDir()
	// The store directory is a file: the record directory cannot be made.
	file := filepath.Join(dir, "objects-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRecords(file); err == nil || !strings.Contains(err.Error(), "records") {
		t.Fatalf("OpenRecords on a file: %v", err)
	}

	r, err := OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	// pending/ gone: Prepare fails, naming the record.
	pending := filepath.Join(dir, "objects", "records", "pending")
	if err := os.RemoveAll(pending); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(1, []byte("x")); err == nil || !strings.Contains(err.Error(), "write record") {
		t.Fatalf("Prepare without pending/: %v", err)
	}
	if err := os.Mkdir(pending, 0o750); err != nil {
		t.Fatal(err)
	}
	// Committing a record that was never prepared (nor committed) is an error.
	name := RecordName(7, []byte("never"))
	if err := r.Commit(name); err == nil || !strings.Contains(err.Error(), "commit record") {
		t.Fatalf("Commit of an unknown record: %v", err)
	}
	// Discarding a name that is a directory (not a record file) reports the failure.
	blocker := filepath.Join(r.be.Location(r.pending), name)
	if err := os.MkdirAll(filepath.Join(blocker, "inside"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := r.Discard(name); err == nil || !strings.Contains(err.Error(), "discard record") {
		t.Fatalf("Discard of a non-empty directory: %v", err)
	}
	// Listing skips what is not a regular record file (that directory).
	if p, err := r.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("pending %v, %v", p, err)
	}
	// Remove: a bad name is invalid input; a name that cannot be removed is an error; a missing
	// one is fine.
	if err := r.Remove("../../x"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("Remove of a path: %v", err)
	}
	if err := r.Remove(RecordName(9, []byte("gone"))); err != nil {
		t.Fatalf("Remove of a missing record: %v", err)
	}
	stuck := RecordName(8, []byte("stuck"))
	if err := os.MkdirAll(filepath.Join(r.be.Location(r.dir), stuck, "inside"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(stuck); err == nil || !strings.Contains(err.Error(), "remove record") {
		t.Fatalf("Remove of a non-empty directory: %v", err)
	}
	// The record directory replaced by a file: listing and verifying fail, naming it.
	if err := os.RemoveAll(r.be.Location(r.dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.be.Location(r.dir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Committed(); err == nil || !strings.Contains(err.Error(), "list") {
		t.Fatalf("Committed on a file: %v", err)
	}
	if _, err := r.Verify(); err == nil {
		t.Fatal("Verify on a file succeeded")
	}
	// A missing record directory lists as empty (a store that never had records).
	if err := os.Remove(r.be.Location(r.dir)); err != nil {
		t.Fatal(err)
	}
	if c, err := r.Committed(); err != nil || len(c) != 0 {
		t.Fatalf("missing records/: %v, %v", c, err)
	}
}
