package persistence

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// countingLedger counts the records prepared: each is one durable write of a transaction.
type countingLedger struct {
	Ledger
	prepared int
}

func (l *countingLedger) Prepare(seq uint64, body []byte) (string, error) {
	l.prepared++
	return l.Ledger.Prepare(seq, body)
}

// Replace inserts an entry, and replaces the one of the same ID whole.
func TestOperationLogReplaceUpserts(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		log := NewOperationLog(e.open(t))
		a := loggedOp("op-a", "p", 0)
		if err := log.Replace(ctx, a); err != nil {
			t.Fatal(err)
		}
		a.Outcome, a.Checkpoints, a.UndoCheckpoint = "internal", []checkpoint.ID{checkpoint.ID(id2)}, ""
		if err := log.Replace(ctx, a); err != nil {
			t.Fatal(err)
		}
		got, err := log.List(ctx, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], a) {
			t.Fatalf("after replace: %+v", got)
		}
	})
}

// A replace that the database refuses is reported.
func TestOperationLogReplaceFailure(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		db := e.open(t)
		failWrites(t, db, "INSERT", "operations")
		if err := NewOperationLog(db).Replace(context.Background(), loggedOp("op-a", "", 0)); err == nil {
			t.Fatal("a refused replace reported success")
		}
	})
}

// A checkpoint and its command's log entry in one transaction are one durable write: one record,
// which a rebuild replays into both rows.
func TestCheckpointAndFoldedEntryAreOneRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := &countingLedger{Ledger: recs}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(ledger))
	if err != nil {
		t.Fatal(err)
	}
	before := ledger.prepared
	cp := newCP(t, id1, time.Unix(100, 0))
	op := loggedOp("op-a", "", 0)
	log, cps := NewOperationLog(db), NewCheckpoints(db)
	err = NewTransactor(db).Do(ctx, func(ctx context.Context) error {
		if err := cps.Add(ctx, cp); err != nil {
			return err
		}
		return log.Replace(ctx, op)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ledger.prepared - before; got != 1 {
		t.Fatalf("records written: %d, want 1", got)
	}
	_ = db.Close()
	rebuilt := filepath.Join(dir, "rebuilt.db")
	if _, err := Rebuild(ctx, rebuilt, recs); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(ctx, rebuilt, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db2.Close() }()
	ops, err := NewOperationLog(db2).List(ctx, 0, "")
	if err != nil || len(ops) != 1 || !reflect.DeepEqual(ops[0], op) {
		t.Fatalf("rebuilt log: %+v, %v", ops, err)
	}
	if _, err := NewCheckpoints(db2).Get(ctx, checkpoint.ID(id1)); err != nil {
		t.Fatal(err)
	}
	var _ port.OperationReplacer = log
}
