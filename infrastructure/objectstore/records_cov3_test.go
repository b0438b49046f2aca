package objectstore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// Through a backend that can only List (as a remote store), the records of a workspace list in
// sequence order; a record unreadable for a reason other than damage is that error, never
// reported as damage, and Verify stops there with what it found damaged so far; a listing that
// fails names the directory.
func TestOS2RecordsThroughAPlainBackend(t *testing.T) {
	be := &os2Backend{Dir: NewDir(t.TempDir(), true)}
	r := NewRecords(os2Plain{be}, WorkspaceRecords("ws1"))
	var names []string
	for seq := uint64(3); seq >= 1; seq-- {
		n, err := r.Prepare(seq, []byte{byte(seq), 'r'})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(n); err != nil {
			t.Fatal(err)
		}
		names = append([]string{n}, names...)
	}
	if got, err := r.Committed(); err != nil || !slices.Equal(got, names) {
		t.Fatalf("Committed = %v, %v; want %v", got, err, names)
	}
	first := be.Location(r.dir + "/" + names[0])
	if err := os.WriteFile(first, []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	be.on("ReadFile", func(n string) bool { return n == r.dir+"/"+names[1] })
	bad, err := r.Verify()
	if !errors.Is(err, errOS2IO) || errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Verify with an unreadable record: %v (want the I/O error, not damage)", err)
	}
	if !slices.Equal(bad, []string{first}) {
		t.Fatalf("Verify found damaged %v, want %v", bad, []string{first})
	}
	if _, err := r.Read(names[1]); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "read record") {
		t.Fatalf("Read of an unreadable record: %v", err)
	}
	be.on("List", func(n string) bool { return n == r.dir })
	if _, err := r.Committed(); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), be.Location(r.dir)) {
		t.Fatalf("Committed with a failing listing: %v", err)
	}
}

// ReadPending returns a pending record checked against its name (a gc counts what pending records
// reference as live): one committed meanwhile is fs.ErrNotExist, and one whose bytes or name are
// wrong is damage naming the file.
func TestOS2ReadPending(t *testing.T) {
	be := NewDir(t.TempDir(), true)
	r := NewRecords(be, WorkspaceRecords("ws2"))
	body := []byte("a pending transaction")
	name, err := r.Prepare(5, body)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadPending(name); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadPending = %q, %v", got, err)
	}
	if err := r.Commit(name); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadPending(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadPending of a record committed meanwhile: %v", err)
	}

	damaged, err := r.Prepare(6, []byte("as prepared"))
	if err != nil {
		t.Fatal(err)
	}
	p := be.Location(r.pending + "/" + damaged)
	if err := os.WriteFile(p, []byte("as found"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadPending(damaged)
	wantIntegrity(t, err, "a damaged pending record")
	if !strings.Contains(err.Error(), p) {
		t.Fatalf("the error does not name %s: %v", p, err)
	}
	if err := os.WriteFile(be.Location(r.pending+"/not-a-record"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadPending("not-a-record")
	wantIntegrity(t, err, "a pending file that is no record")
}
