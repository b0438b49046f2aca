package persistence

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attaching records to a database that holds rows from before records writes a baseline first; if
// that record cannot be written, Open fails and leaves no record, and the next Open (the ledger
// writable again) writes the baseline, from which a rebuild equals the database.
func TestOpenFailsWhenTheBaselineCannotBeWritten(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plan.db")
	old := mustOpen(t, path, true)
	for i, id := range []string{id1, id2} {
		if err := NewCheckpoints(old).Add(ctx, newCP(t, id, time.Unix(int64(i), 0))); err != nil {
			t.Fatal(err)
		}
	}
	_ = old.Close()

	l := &faultyLedger{Records: newRecords(t), prepare: true}
	if _, err := Open(ctx, path, false, WithLedger(l)); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "write the record") {
		t.Fatalf("open with an unwritable ledger: %v", err)
	}
	if c, err := l.Records.Committed(); err != nil || len(c) != 0 {
		t.Fatalf("records after a failed baseline: %v, %v", c, err)
	}
	if p, err := l.Records.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("pending records after a failed baseline: %v, %v", p, err)
	}

	l.prepare = false
	db, err := Open(ctx, path, false, WithLedger(l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if c, _ := l.Records.Committed(); len(c) != 1 {
		t.Fatalf("records after the baseline: %v", c)
	}
	_, rebuilt, err := engines[0].rebuild(t, l.Records, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffDumps(dump(t, db), dump(t, rebuilt)); d != "" {
		t.Fatalf("the rebuilt database differs:\n%s", d)
	}
}
