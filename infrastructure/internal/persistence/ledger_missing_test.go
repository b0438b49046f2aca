package persistence

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Records deleted from the store are named, oldest first; Compact writes them again (as a
// baseline); a database opened without its records is checked the same; a failing listing or
// ledger table is reported.
func TestMissingRecords(t *testing.T) {
	ctx := context.Background()
	f0 := newLedgerFixture(t, 0)
	if m, err := f0.db.MissingRecords(ctx, f0.l); err != nil || len(m) != 0 {
		t.Fatalf("a new database: %v, %v", m, err)
	}
	f := newLedgerFixture(t, 3)
	if m, err := f.db.MissingRecords(ctx, f.l); err != nil || len(m) != 0 {
		t.Fatalf("a whole store: %v, %v", m, err)
	}
	committed, _ := f.names(t)
	if len(committed) < 3 {
		t.Fatalf("%d records", len(committed))
	}
	gone := []string{committed[0], committed[len(committed)-1]}
	for _, n := range gone {
		if err := f.recs.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	m, err := f.db.MissingRecords(ctx, f.l)
	if err != nil || !slices.Equal(m, gone) {
		t.Fatalf("MissingRecords: %v, %v (want %v)", m, err, gone)
	}
	f.l.pending = true
	if _, err := f.db.MissingRecords(ctx, f.l); !errors.Is(err, errInjected) {
		t.Fatalf("pending unlistable: %v", err)
	}
	f.l.pending, f.l.committed = false, true
	if _, err := f.db.MissingRecords(ctx, f.l); !errors.Is(err, errInjected) {
		t.Fatalf("committed unlistable: %v", err)
	}
	f.l.committed = false
	if _, err := f.db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := f.db.MissingRecords(ctx, f.l); err != nil || len(m) != 0 {
		t.Fatalf("after Compact: %v, %v", m, err)
	}
	// A database opened without its records (as doctor opens it) is checked the same.
	none, err := f.open(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = none.Close() }()
	baseline, _ := f.names(t)
	if err := f.recs.Remove(baseline[len(baseline)-1]); err != nil {
		t.Fatal(err)
	}
	if m, err := none.MissingRecords(ctx, f.l); err != nil || len(m) != 1 {
		t.Fatalf("a database opened without its records: %v, %v", m, err)
	}
	dropTable(t, f.db, "ledger")
	if _, err := f.db.MissingRecords(ctx, f.l); err == nil {
		t.Fatal("MissingRecords without a ledger table")
	}
}
