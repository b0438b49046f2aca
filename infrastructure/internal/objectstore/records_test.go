package objectstore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
)

func TestRecordsLifecycle(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Prepare(1, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Prepare(2, []byte(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	// A retry of the same transaction with the same bytes is the same record.
	if again, err := r.Prepare(1, []byte(`{"a":1}`)); err != nil || again != a {
		t.Fatalf("retry: %s, %v", again, err)
	}
	if p, _ := r.Pending(); !reflect.DeepEqual(p, []string{a, b}) {
		t.Fatalf("pending = %v", p)
	}
	// A prepared record is not history yet.
	if c, _ := r.Committed(); len(c) != 0 {
		t.Fatalf("committed before commit: %v", c)
	}
	if _, err := r.Read(a); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read of an uncommitted record: %v", err)
	}
	if err := r.Commit(a); err != nil {
		t.Fatal(err)
	}
	// Committing twice (a reconcile raced the writer) is fine; discarding a committed one removes
	// nothing.
	if err := r.Commit(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Discard(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Discard(b); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(b); err == nil {
		t.Fatal("a discarded record was committed")
	}
	if c, _ := r.Committed(); !reflect.DeepEqual(c, []string{a}) {
		t.Fatalf("committed = %v", c)
	}
	if p, _ := r.Pending(); len(p) != 0 {
		t.Fatalf("pending = %v", p)
	}
	got, err := r.Read(a)
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("read %q, %v", got, err)
	}
	if bad, err := r.Verify(); err != nil || len(bad) != 0 {
		t.Fatalf("verify: %v %v", bad, err)
	}
}

// Records sort by transaction number whatever their hashes, and a listing ignores what is not a
// record (temporary files, a stray directory).
func TestRecordsOrderAndNames(t *testing.T) {
	r, err := OpenRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, seq := range []uint64{1, 2, 15, 16, 255, 4096} {
		n, err := r.Prepare(seq, []byte(strings.Repeat("x", int(seq%7))))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(n); err != nil {
			t.Fatal(err)
		}
		if got, ok := ParseRecordName(n); !ok || got != seq {
			t.Fatalf("ParseRecordName(%s) = %d, %v", n, got, ok)
		}
		want = append(want, n)
	}
	for _, junk := range []string{".tmp123", "0000000000000001-zz", "notarecord"} {
		if err := os.WriteFile(filepath.Join(r.Dir(), junk), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := r.Committed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("committed = %v\nwant %v", got, want)
	}
	for _, bad := range []string{
		"", "00000000000000010000", "0000000000000001-" + strings.Repeat("0", 63),
		"000000000000000G-" + strings.Repeat("0", 64), "0000000000000001-" + strings.Repeat("A", 64),
		"00000000000000AB-" + strings.Repeat("0", 64),
	} {
		if _, ok := ParseRecordName(bad); ok {
			t.Errorf("ParseRecordName(%q) accepted", bad)
		}
	}
	if _, err := r.Read("../../etc/passwd"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("read of a path: %v", err)
	}
}

// A record whose bytes changed, or that vanished, is damage naming the file; Verify lists it.
func TestRecordsDamage(t *testing.T) {
	r, err := OpenRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 3 {
		n, err := r.Prepare(uint64(i+1), []byte(`{"n":`+string(rune('0'+i))+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	p := filepath.Join(r.Dir(), names[1])
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(names[1]); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), names[1]) {
		t.Fatalf("flipped byte: %v", err)
	}
	bad, err := r.Verify()
	if err != nil || len(bad) != 1 || bad[0] != p {
		t.Fatalf("verify = %v, %v", bad, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(names[1]); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing record: %v", err)
	}
}

// Listing records reads names alone: anything that is not a record name, and a directory that has
// one, is not a record; through a backend that can only List, the result is the same.
func TestRecordsListOnlyRecords(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for seq := uint64(3); seq > 0; seq-- {
		name, err := r.Prepare(seq, []byte{byte(seq)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(name); err != nil {
			t.Fatal(err)
		}
		want = append([]string{name}, want...)
	}
	fake := RecordName(9, []byte("a directory"))
	if err := os.Mkdir(filepath.Join(dir, "records", fake), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "records", "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := r.Committed()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed = %v, %v; want %v", got, err, want)
	}
	listOnly := NewRecords(struct{ Backend }{NewDir(dir, false)}, "records")
	if got, err := listOnly.Committed(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed through List = %v, %v; want %v", got, err, want)
	}
}

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
	faulttest.Require(t, err, fault.ErrIntegrity, "a damaged pending record")
	if !strings.Contains(err.Error(), p) {
		t.Fatalf("the error does not name %s: %v", p, err)
	}
	if err := os.WriteFile(be.Location(r.pending+"/not-a-record"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadPending("not-a-record")
	faulttest.Require(t, err, fault.ErrIntegrity, "a pending file that is no record")
}
