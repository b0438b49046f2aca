package persistence

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

func loggedOp(id, plan string, at int) port.LoggedOperation {
	start := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(at) * time.Minute)
	return port.LoggedOperation{
		ID: id, Kind: "run", Args: []string{"run", "--plan", "it's \"quoted\""}, Plan: plan,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond), Outcome: "ok",
		Checkpoints:    []checkpoint.ID{checkpoint.ID(id1), checkpoint.ID(id2)},
		UndoCheckpoint: checkpoint.ID(id1),
	}
}

// The operation log keeps every field, lists newest first, filters by plan and limit, records an
// undo, and refuses a duplicate or an undo of an unknown operation with the right kind of error.
func TestOperationLogRoundTrip(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		log := NewOperationLog(e.open(t))
		a, b, c := loggedOp("op-a", "p1", 0), loggedOp("op-b", "p2", 1), loggedOp("op-c", "p1", 2)
		c.Args, c.Checkpoints, c.UndoCheckpoint = nil, nil, ""
		for _, op := range []port.LoggedOperation{a, b, c} {
			if err := log.Add(ctx, op); err != nil {
				t.Fatal(err)
			}
		}
		if err := log.Add(ctx, a); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("duplicate operation: %v", err)
		}
		all, err := log.List(ctx, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		c.Args = []string{} // no arguments reads back as an empty list
		want := []port.LoggedOperation{c, b, a}
		if !reflect.DeepEqual(all, want) {
			t.Fatalf("list:\n got %+v\nwant %+v", all, want)
		}
		if got, _ := log.List(ctx, 1, ""); len(got) != 1 || got[0].ID != "op-c" {
			t.Fatalf("limit 1: %+v", got)
		}
		if got, _ := log.List(ctx, 0, "p1"); len(got) != 2 || got[0].ID != "op-c" || got[1].ID != "op-a" {
			t.Fatalf("plan p1: %+v", got)
		}
		if got, _ := log.List(ctx, 0, "nope"); len(got) != 0 {
			t.Fatalf("unknown plan: %+v", got)
		}

		if err := log.MarkUndone(ctx, "op-b", "op-c"); err != nil {
			t.Fatal(err)
		}
		if err := log.MarkUndone(ctx, "op-x", "op-c"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("undo of an unknown operation: %v", err)
		}
		got, _ := log.List(ctx, 0, "p2")
		if len(got) != 1 || got[0].UndoneBy != "op-c" {
			t.Fatalf("after undo: %+v", got)
		}
	})
}

// Damaged arguments or checkpoints of a logged operation are an integrity error naming it, never
// an empty list.
func TestOperationLogDamageIsIntegrity(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, column := range []string{"args", "checkpoints"} {
			db := e.open(t)
			log := NewOperationLog(db)
			if err := log.Add(ctx, loggedOp("op-a", "", 0)); err != nil {
				t.Fatal(err)
			}
			if err := db.gorm.Exec(`UPDATE operations SET ` + column + ` = '["x"'`).Error; err != nil {
				t.Fatal(err)
			}
			_, err := log.List(ctx, 0, "")
			if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "op-a") {
				t.Fatalf("damaged %s: %v", column, err)
			}
		}
	})
}

// A failed write of the log is reported, not taken for success.
func TestOperationLogFailedWrites(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		log := NewOperationLog(db)
		if err := log.Add(ctx, loggedOp("op-a", "", 0)); err != nil {
			t.Fatal(err)
		}
		failWrites(t, db, "INSERT", "operations")
		failWrites(t, db, "UPDATE", "operations")
		if err := log.Add(ctx, loggedOp("op-b", "", 1)); err == nil || errors.Is(err, fault.ErrConflict) {
			t.Fatalf("refused insert: %v", err)
		}
		if err := log.MarkUndone(ctx, "op-a", "op-z"); err == nil || errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("refused update: %v", err)
		}
		got, err := log.List(ctx, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].UndoneBy != "" {
			t.Fatalf("after refused writes: %+v", got)
		}
		if err := db.gorm.Exec(`DROP TABLE operations`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := log.List(ctx, 0, ""); err == nil {
			t.Fatal("a failed read is not an empty log")
		}
	})
}

// The operation log is part of what a rebuild reproduces: `plan history` and `plan undo` must
// survive a lost database, undone marks included.
func TestRebuildReproducesTheOperationLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	log := NewOperationLog(db)
	for i, id := range []string{"op-a", "op-b", "op-c"} {
		if err := log.Add(ctx, loggedOp(id, "p", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.MarkUndone(ctx, "op-b", "op-c"); err != nil {
		t.Fatal(err)
	}
	want, _ := log.List(ctx, 0, "")
	_ = db.Close()

	rebuilt := filepath.Join(dir, "rebuilt.db")
	rep, err := Rebuild(ctx, rebuilt, recs)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 {
		t.Fatalf("records applied: %d", rep.Records)
	}
	db2, err := Open(ctx, rebuilt, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db2.Close() }()
	got, err := NewOperationLog(db2).List(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt log:\n got %+v\nwant %+v", got, want)
	}
}
