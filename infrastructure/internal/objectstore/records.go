package objectstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/planhq/plan/domain/fault"
)

// Records keeps the metadata database's history beside the content, under <objects>/records: one
// immutable file per committed database transaction, so the database can always be rebuilt from
// the store (see persistence.Rebuild). The store does not interpret a record's bytes.
//
// Layout:
//
//	records/<seq>-<sha256>           a committed record: seq is 16 lower-case hex digits (the
//	                                 transaction's number, so names sort in commit order) and
//	                                 sha256 the hex SHA-256 of the file's bytes
//	records/pending/<seq>-<sha256>   a prepared record whose transaction has not been confirmed
//	workspaces/<id>.head             (a shared store) the newest record number a commit made
//
// Invariants:
//   - a record is immutable and checked against its name on every read; damage is
//     fault.ErrIntegrity naming the file, never returned as content;
//   - Prepare returns only once the record is durable (file and directory fsync'd), so a database
//     commit that follows it is always backed by a record;
//   - Commit is a rename out of pending/: atomic, and idempotent (a record another process already
//     committed is not an error). A commit a power loss undoes leaves the record pending, which the
//     next reconcile (the database still names it) commits again;
//   - on a shared store every Commit then raises the workspace's high-water mark, which is never
//     above a number the workspace committed: records missing below it (the newest deleted, which
//     leaves no gap in what is left) are a hole no gc may trust;
//   - only committed records are history: a pending record may belong to a transaction that never
//     committed, so a rebuild without the database ignores it (it is the operation a crash cut
//     short, which never reported success).
type Records struct {
	// Confirm, when set, runs once a prepared record is durable and before Prepare returns; an
	// error discards the record and fails Prepare, so the transaction does not commit. A shared
	// store sets it to Store.Confirm: the objects a transaction references must still be held
	// once its record is visible (see the gc protocol in marks.go).
	Confirm func() error

	be      Backend
	dir     string // "records" in a private store, "records/<workspace id>" in a shared one
	pending string
}

// OpenRecords returns the record directory of the private store in the local directory objects,
// creating it.
func OpenRecords(objects string) (*Records, error) {
	r := NewRecords(NewDir(objects, false), "records")
	p := filepath.Join(objects, "records", "pending")
	if err := os.MkdirAll(p, 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return r, nil
}

// NewRecords returns the records kept in be under dir ("records" for a private store,
// WorkspaceRecords(id) for a shared one).
func NewRecords(be Backend, dir string) *Records {
	return &Records{be: be, dir: dir, pending: dir + "/pending"}
}

// WorkspaceRecords is where a shared store keeps the records of workspace id.
func WorkspaceRecords(id string) string { return "records/" + id }

// Backend is the store the records are kept in.
func (r *Records) Backend() Backend { return r.be }

// Dir locates the committed records, for messages.
func (r *Records) Dir() string { return r.be.Location(r.dir) }

// RecordName is the file name of the record with sequence number seq and content body.
func RecordName(seq uint64, body []byte) string {
	sum := sha256.Sum256(body)
	return fmt.Sprintf("%016x-%s", seq, hex.EncodeToString(sum[:]))
}

// ParseRecordName returns the sequence number a record name holds; ok is false for anything that
// is not a record name (a temporary file, say).
func ParseRecordName(name string) (seq uint64, ok bool) {
	s, sum, found := strings.Cut(name, "-")
	if !found || len(s) != 16 || len(sum) != 64 {
		return 0, false
	}
	if _, err := hex.DecodeString(sum); err != nil || strings.ToLower(sum) != sum {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 16, 64)
	return seq, err == nil && strings.ToLower(s) == s
}

// Prepare writes body as the pending record of transaction seq and returns its name once it is
// durable.
func (r *Records) Prepare(seq uint64, body []byte) (string, error) {
	name := RecordName(seq, body)
	p := r.pending + "/" + name
	// fs.ErrExist: the same transaction number and content, a retry of this very record.
	if err := r.be.Create(p, body, 0o640); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("write record %s: %w", r.be.Location(p), err)
	}
	if r.Confirm != nil {
		if err := r.Confirm(); err != nil {
			return "", errors.Join(err, r.Discard(name))
		}
	}
	return name, nil
}

// Commit makes the prepared record name part of the history, then raises the workspace's
// high-water mark (see Head) to it.
func (r *Records) Commit(name string) error {
	err := r.be.Rename(r.pending+"/"+name, r.dir+"/"+name)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := r.be.ReadFile(r.dir + "/" + name); serr == nil {
			err = nil // another process's reconcile committed it first
		}
	}
	if err != nil {
		return fmt.Errorf("commit record %s: %w", name, err)
	}
	return r.raiseHead(name)
}

// headName is where a shared store keeps a workspace's high-water mark: workspaces/<id>.head,
// beside its descriptor. A private store keeps none: its only reader is its own database.
func (r *Records) headName() (string, bool) {
	id, ok := strings.CutPrefix(r.dir, "records/")
	if !ok || !r.be.Shared() {
		return "", false
	}
	return "workspaces/" + id + ".head", true
}

// raiseHead records name's number as the newest record committed. One write, no read first: two
// processes of one workspace committing at once may leave the lower of their two numbers, which
// only weakens the mark (a gap below it is still seen), never makes it claim a record that was
// never committed.
func (r *Records) raiseHead(name string) error {
	p, ok := r.headName()
	if !ok {
		return nil
	}
	seq, ok := ParseRecordName(name)
	if !ok {
		return fault.Invalid("%q is not a record name", name)
	}
	if err := r.be.WriteFile(p, []byte(strconv.FormatUint(seq, 10)+"\n"), 0o640); err != nil {
		return fmt.Errorf("record the newest record of %s: %w", r.be.Location(r.dir), err)
	}
	return nil
}

// Head returns the number of the newest record the workspace committed, as its high-water mark
// says (a shared store only). Deleting a workspace's newest records leaves no gap in what is left,
// so only this mark shows it: a gc that finds records missing below it must not trust the records.
// ok is false when there is no mark (a private store, or a workspace that has committed nothing
// since marks were kept); a mark that cannot be read as a number is fault.ErrIntegrity.
func (r *Records) Head() (seq uint64, ok bool, err error) {
	p, shared := r.headName()
	if !shared {
		return 0, false, nil
	}
	b, err := r.be.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read %s: %w", r.be.Location(p), err)
	}
	seq, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || seq == 0 {
		return 0, false, fault.Integrity("%s is damaged: want the number of the workspace's newest record", r.be.Location(p))
	}
	return seq, true, nil
}

// Discard removes the prepared record name (its transaction did not commit); a missing one is fine.
func (r *Records) Discard(name string) error {
	if err := r.be.Remove(r.pending + "/" + name); err != nil {
		return fmt.Errorf("discard record %s: %w", name, err)
	}
	return nil
}

// Remove deletes the committed record name (a newer baseline made it redundant); a missing one is
// fine.
func (r *Records) Remove(name string) error {
	if _, ok := ParseRecordName(name); !ok {
		return fault.Invalid("%q is not a record name", name)
	}
	if err := r.be.Remove(r.dir + "/" + name); err != nil {
		return fmt.Errorf("remove record %s: %w", name, err)
	}
	return nil
}

// Pending lists the prepared records, in sequence order.
func (r *Records) Pending() ([]string, error) { return r.list(r.pending) }

// Committed lists the committed records, in sequence order.
func (r *Records) Committed() ([]string, error) { return r.list(r.dir) }

// Files lists the committed records with their sizes and times (for growth statistics).
func (r *Records) Files() ([]FileInfo, error) {
	files, err := r.be.List(r.dir)
	if err != nil {
		return nil, err
	}
	out := files[:0]
	for _, f := range files {
		if _, ok := ParseRecordName(f.Name); ok && !f.Dir {
			out = append(out, f)
		}
	}
	return out, nil
}

// list returns the record names in dir, sorted. A backend that can list names alone is asked for
// them: a record's name says all there is to know without a stat, and every command lists them.
func (r *Records) list(dir string) ([]string, error) {
	var names []string
	if nl, ok := r.be.(nameLister); ok {
		all, err := nl.ListNames(dir)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if _, ok := ParseRecordName(n); ok {
				names = append(names, n)
			}
		}
	} else {
		files, err := r.be.List(dir)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r.be.Location(dir), err)
		}
		for _, f := range files {
			if _, ok := ParseRecordName(f.Name); ok && !f.Dir {
				names = append(names, f.Name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Read returns the committed record name's bytes, checked against its name (the store's own
// bytes: a local copy that does not match is dropped and the record read again).
func (r *Records) Read(name string) ([]byte, error) {
	if _, ok := ParseRecordName(name); !ok {
		return nil, fault.Invalid("%q is not a record name", name)
	}
	p := r.dir + "/" + name
	b, err := r.be.ReadFile(p)
	if lc, ok := r.be.(localCopies); ok && err == nil && RecordName(mustSeq(name), b) != name && lc.DropLocal(p) {
		// A local copy is not the store: only the store's own bytes can be damaged.
		b, err = r.be.ReadFile(p)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fault.Integrity("record %s is missing", r.be.Location(p))
		}
		return nil, fmt.Errorf("read record %s: %w", r.be.Location(p), err)
	}
	if RecordName(mustSeq(name), b) != name {
		return nil, fault.Integrity("record %s is damaged: its bytes do not match its name", r.be.Location(p))
	}
	return b, nil
}

// ReadPending returns a pending record's bytes, checked against its name (GC of a shared store
// counts what pending records reference as live: their transactions may be committing).
func (r *Records) ReadPending(name string) ([]byte, error) {
	p := r.pending + "/" + name
	b, err := r.be.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if seq, ok := ParseRecordName(name); !ok || RecordName(seq, b) != name {
		return nil, fault.Integrity("record %s is damaged: its bytes do not match its name", r.be.Location(p))
	}
	return b, nil
}

func mustSeq(name string) uint64 {
	seq, _ := ParseRecordName(name)
	return seq
}

// Verify reads every committed record, from the store's own bytes (a local copy is dropped
// first), and returns the names of the damaged ones.
func (r *Records) Verify() ([]string, error) {
	names, err := r.Committed()
	if err != nil {
		return nil, err
	}
	lc, _ := r.be.(localCopies)
	var bad []string
	for _, n := range names {
		if lc != nil {
			lc.DropLocal(r.dir + "/" + n)
		}
		if _, err := r.Read(n); err != nil {
			if errors.Is(err, fault.ErrIntegrity) {
				bad = append(bad, r.be.Location(r.dir+"/"+n))
				continue
			}
			return bad, err
		}
	}
	return bad, nil
}
