package persistence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// A history with a hole is named: a record deleted in the middle, or the first ones; a pending
// record fills in for its committed copy; the records before a baseline are not needed.
func TestLedgerHole(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 4)
	if h, err := LedgerHole(f.l); err != nil || h != "" {
		t.Fatalf("a whole history: %q, %v", h, err)
	}
	committed, _ := f.names(t)
	mid := committed[2]
	// Made pending again (a commit a crash cut short): no hole.
	if err := os.Rename(filepath.Join(f.dir, "objects", "records", mid), filepath.Join(f.dir, "objects", "records", "pending", mid)); err != nil {
		t.Fatal(err)
	}
	if h, err := LedgerHole(f.l); err != nil || h != "" {
		t.Fatalf("a record still pending: %q, %v", h, err)
	}
	if err := os.Remove(filepath.Join(f.dir, "objects", "records", "pending", mid)); err != nil {
		t.Fatal(err)
	}
	if h, err := LedgerHole(f.l); err != nil || !strings.Contains(h, "1 of its records between number 1 and") {
		t.Fatalf("a record deleted: %q, %v", h, err)
	}
	if err := f.recs.Remove(committed[0]); err != nil {
		t.Fatal(err)
	}
	if h, err := LedgerHole(f.l); err != nil || !strings.Contains(h, "before number 2 are missing") {
		t.Fatalf("the first record deleted: %q, %v", h, err)
	}
	f.l.readFails = map[string]bool{committed[1]: true}
	if _, err := LedgerHole(f.l); !errors.Is(err, errInjected) {
		t.Fatalf("the first record unreadable: %v", err)
	}
	f.l.readFails = map[string]bool{committed[len(committed)-1]: true}
	if _, err := LedgerHole(f.l); !errors.Is(err, errInjected) {
		t.Fatalf("the newest record unreadable: %v", err)
	}
	f.l.readFails = nil
	// A baseline stands for everything before it.
	if _, err := f.db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	f.add(t, fixtureID(5), nil)
	if h, err := LedgerHole(f.l); err != nil || h != "" {
		t.Fatalf("after a baseline: %q, %v", h, err)
	}
	f.l.pending = true
	if _, err := LedgerHole(f.l); !errors.Is(err, errInjected) {
		t.Fatalf("pending unlistable: %v", err)
	}
	f.l.pending, f.l.committed = false, true
	if _, err := LedgerHole(f.l); !errors.Is(err, errInjected) {
		t.Fatalf("committed unlistable: %v", err)
	}
	f.l.committed = false
	if h, err := LedgerHole(newLedgerFixture(t, 0).l); err != nil || h != "" {
		t.Fatalf("an empty history: %q, %v", h, err)
	}
}

// A first record that is not a baseline and not number 1, but damaged: integrity.
func TestLedgerHoleDamagedFirstRecord(t *testing.T) {
	f := newLedgerFixture(t, 3)
	committed, _ := f.names(t)
	if err := f.recs.Remove(committed[0]); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.dir, "objects", "records", committed[1])
	_ = os.Chmod(p, 0o600)
	if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LedgerHole(&rawLedger{f.l}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged first record: %v", err)
	}
}

// rawLedger reads records without checking them against their names, as a damaged but
// name-matching record would read.
type rawLedger struct{ *faultyLedger }

func (r *rawLedger) Read(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.Dir(), name))
}

// goneLedger finds every record it lists gone when read (a compaction removing them, over and
// over): LedgerHole gives up after a few attempts.
type goneLedger struct{ *faultyLedger }

func (g *goneLedger) Read(name string) ([]byte, error) {
	return nil, fault.Integrity("record %s is missing", name)
}

func TestLedgerHoleGivesUpOnVanishingRecords(t *testing.T) {
	f := newLedgerFixture(t, 3)
	if _, err := LedgerHole(&goneLedger{f.l}); !errors.Is(err, errVanished) {
		t.Fatalf("records vanishing at every attempt: %v", err)
	}
}

// headLedger is a ledger with a high-water mark, as a shared store's records are.
type headLedger struct {
	Ledger
	head uint64
	ok   bool
	err  error
}

func (h headLedger) Head() (uint64, bool, error) { return h.head, h.ok, h.err }

// The newest records deleted leave no gap in what is left; the mark shows them.
func TestLedgerHoleAboveTheRecordsLeft(t *testing.T) {
	f := newLedgerFixture(t, 4)
	committed, _ := f.names(t)
	last, err := recordSeq(committed[len(committed)-1])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l    headLedger
		want string
	}{
		{headLedger{Ledger: f.l, head: last, ok: true}, ""},
		{headLedger{Ledger: f.l}, ""},
		{headLedger{Ledger: f.l, head: last + 2, ok: true}, fmt.Sprintf("its newest records are missing (it committed number %d; the newest left is number %d)", last+2, last)},
	} {
		if h, err := LedgerHole(c.l); err != nil || h != c.want {
			t.Errorf("mark %d (%v): %q, %v; want %q", c.l.head, c.l.ok, h, err, c.want)
		}
	}
	if _, err := LedgerHole(headLedger{Ledger: f.l, err: errInjected}); !errors.Is(err, errInjected) {
		t.Fatalf("a mark that cannot be read: %v", err)
	}
	if got := maxPending([]string{"garbage", committed[0], committed[1]}); got != 2 {
		t.Fatalf("maxPending = %d", got)
	}
}

// racingLedger is a ledger another process of its workspace commits to while it is listed: the
// mark moves past what the listing saw.
type racingLedger struct {
	Ledger
	head *uint64
}

func (r racingLedger) Head() (uint64, bool, error) { return *r.head, true, nil }

func (r racingLedger) Committed() ([]string, error) {
	names, err := r.Ledger.Committed()
	*r.head += 3 // commits made after this listing
	return names, err
}

// The mark is read before the listings: commits made meanwhile are no hole.
func TestLedgerHoleReadsTheMarkFirst(t *testing.T) {
	f := newLedgerFixture(t, 4)
	committed, _ := f.names(t)
	last, err := recordSeq(committed[len(committed)-1])
	if err != nil {
		t.Fatal(err)
	}
	if h, err := LedgerHole(racingLedger{Ledger: f.l, head: &last}); err != nil || h != "" {
		t.Fatalf("commits made while the records were listed: %q, %v", h, err)
	}
}
