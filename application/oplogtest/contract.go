// Package oplogtest is the behaviour every application.History (the rollback history) and every
// application.OperationLog (`plan history`) must have, as test suites that the gorm adapters and
// the use cases' in-memory fakes both run, so the fakes cannot drift from what production does
// (domain/checkpoint/checkpointtest does the same for checkpoints). It lives in non-test files so
// both packages' tests can call it.
package oplogtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// base is when the suite's first operation starts: not UTC, with nanoseconds, which a store must
// keep (as UTC) to the nanosecond.
var base = time.Date(2025, 6, 1, 14, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

// at is n seconds after base.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// ID returns the n-th test operation ID (24 hex characters).
func ID(n int) string { return fmt.Sprintf("eeee%020d", n) }

func cp(n int) checkpoint.ID { return checkpoint.ID(fmt.Sprintf("cccc%020d", n)) }

func sameTime(got, want time.Time) bool { return got.Equal(want) && got.Location() == time.UTC }

// record is a history record with every field set, started n seconds after base.
func record(n int) port.HistoryRecord {
	return port.HistoryRecord{
		ID: ID(n), Kind: "rollback", TargetCheckpoint: cp(n), BackupCheckpoint: cp(100 + n),
		StartedAt: at(n), FinishedAt: at(n).Add(1500 * time.Microsecond),
		Added: n, Modified: 2 * n, Deleted: 3 * n, Reverted: []string{"b", "a"},
	}
}

func diffRecord(got, want port.HistoryRecord) error {
	if got.ID != want.ID || got.Kind != want.Kind || got.TargetCheckpoint != want.TargetCheckpoint ||
		got.BackupCheckpoint != want.BackupCheckpoint || !sameTime(got.StartedAt, want.StartedAt) ||
		!sameTime(got.FinishedAt, want.FinishedAt) || got.Added != want.Added || got.Modified != want.Modified ||
		got.Deleted != want.Deleted || !slices.Equal(got.Reverted, want.Reverted) {
		return fmt.Errorf("got %+v, want %+v (times in UTC)", got, want)
	}
	return nil
}

// History runs the rollback history's suite against fresh histories made by newHistory.
func History(t *testing.T, newHistory func(t *testing.T) port.History) {
	ctx := context.Background()
	t.Run("record, has and get", func(t *testing.T) {
		h := newHistory(t)
		if ok, err := h.Has(ctx, ID(1)); err != nil || ok {
			t.Fatalf("has of none: %v, %v", ok, err)
		}
		if _, err := h.Get(ctx, ID(1)); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("get of none: %v, want not found", err)
		}
		want := record(1)
		if err := h.Record(ctx, want); err != nil {
			t.Fatal(err)
		}
		if ok, err := h.Has(ctx, ID(1)); err != nil || !ok {
			t.Fatalf("has after record: %v, %v", ok, err)
		}
		got, err := h.Get(ctx, ID(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := diffRecord(got, want); err != nil {
			t.Fatal(err)
		}
		// A record with nothing reverted and no backup (a correction's revert step may have none).
		bare := port.HistoryRecord{ID: ID(2), Kind: "correct", TargetCheckpoint: cp(2), StartedAt: at(2), FinishedAt: at(3)}
		if err := h.Record(ctx, bare); err != nil {
			t.Fatal(err)
		}
		if got, err := h.Get(ctx, ID(2)); err != nil || diffRecord(got, bare) != nil {
			t.Fatalf("bare record: %+v, %v", got, err)
		}
	})
	t.Run("a second record of an ID is refused", func(t *testing.T) {
		// Finishers are idempotent through Has: recording twice is a conflict, and the first stands.
		h := newHistory(t)
		want := record(1)
		if err := h.Record(ctx, want); err != nil {
			t.Fatal(err)
		}
		again := record(1)
		again.Added = 99
		if err := h.Record(ctx, again); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("a second record of %s: %v, want a conflict", ID(1), err)
		}
		if got, err := h.Get(ctx, ID(1)); err != nil || diffRecord(got, want) != nil {
			t.Fatalf("after the refused record: %+v, %v", got, err)
		}
	})
	t.Run("list oldest first", func(t *testing.T) {
		h := newHistory(t)
		if l, err := h.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("list of none: %v, %v", l, err)
		}
		for _, n := range []int{3, 1, 4, 2} { // recorded out of order
			if err := h.Record(ctx, record(n)); err != nil {
				t.Fatal(err)
			}
		}
		l, err := h.List(ctx)
		if err != nil || len(l) != 4 {
			t.Fatalf("list: %v, %v", l, err)
		}
		for i, r := range l {
			if err := diffRecord(r, record(i+1)); err != nil {
				t.Fatalf("entry %d: %v; want them by start, oldest first", i, err)
			}
		}
	})
	t.Run("what a caller holds is not the stored record", func(t *testing.T) {
		h := newHistory(t)
		r := record(1)
		if err := h.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Reverted[0] = "changed after"
		got, err := h.Get(ctx, ID(1))
		if err != nil {
			t.Fatal(err)
		}
		got.Reverted[1] = "changed after get"
		if again, err := h.Get(ctx, ID(1)); err != nil || !slices.Equal(again.Reverted, []string{"b", "a"}) {
			t.Fatalf("reverted %v, %v; want b a as recorded", again.Reverted, err)
		}
	})
}

// operation is a logged operation with every field set, started n seconds after base.
func operation(n int, planName string) port.LoggedOperation {
	return port.LoggedOperation{
		ID: ID(n), Kind: "rollback", Args: []string{"rollback", fmt.Sprint(n), "--mode", "files"}, Plan: planName,
		StartedAt: at(n), FinishedAt: at(n).Add(time.Millisecond), Outcome: "ok",
		Checkpoints: []checkpoint.ID{cp(n), cp(100 + n)}, UndoCheckpoint: cp(200 + n),
	}
}

func diffOperation(got, want port.LoggedOperation) error {
	if got.ID != want.ID || got.Kind != want.Kind || !slices.Equal(got.Args, want.Args) || got.Plan != want.Plan ||
		!sameTime(got.StartedAt, want.StartedAt) || !sameTime(got.FinishedAt, want.FinishedAt) || got.Outcome != want.Outcome ||
		!slices.Equal(got.Checkpoints, want.Checkpoints) || got.UndoCheckpoint != want.UndoCheckpoint || got.UndoneBy != want.UndoneBy {
		return fmt.Errorf("got %+v, want %+v (times in UTC)", got, want)
	}
	return nil
}

func opIDs(ops []port.LoggedOperation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}

// OperationLog runs the operation log's suite against fresh logs made by newLog. A log that is
// also an application.OperationReplacer has its Replace checked too.
func OperationLog(t *testing.T, newLog func(t *testing.T) port.OperationLog) {
	ctx := context.Background()
	list := func(t *testing.T, l port.OperationLog, limit int, planName string) []port.LoggedOperation {
		t.Helper()
		ops, err := l.List(ctx, limit, planName)
		if err != nil {
			t.Fatal(err)
		}
		return ops
	}
	t.Run("add and list every field", func(t *testing.T) {
		l := newLog(t)
		if ops := list(t, l, 0, ""); len(ops) != 0 {
			t.Fatalf("list of none: %v", opIDs(ops))
		}
		full := operation(1, "p")
		bare := port.LoggedOperation{ID: ID(2), Kind: "gc", StartedAt: at(2), FinishedAt: at(2), Outcome: "integrity"}
		for _, op := range []port.LoggedOperation{full, bare} {
			if err := l.Add(ctx, op); err != nil {
				t.Fatal(err)
			}
		}
		ops := list(t, l, 0, "")
		if len(ops) != 2 {
			t.Fatalf("list: %v", opIDs(ops))
		}
		if err := diffOperation(ops[0], bare); err != nil {
			t.Fatal(err)
		}
		if err := diffOperation(ops[1], full); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a second entry of an ID is refused", func(t *testing.T) {
		l := newLog(t)
		if err := l.Add(ctx, operation(1, "p")); err != nil {
			t.Fatal(err)
		}
		again := operation(1, "q")
		if err := l.Add(ctx, again); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("a second entry of %s: %v, want a conflict", ID(1), err)
		}
		if ops := list(t, l, 0, ""); len(ops) != 1 || diffOperation(ops[0], operation(1, "p")) != nil {
			t.Fatalf("after the refused entry: %+v", ops)
		}
	})
	t.Run("newest first, by start", func(t *testing.T) {
		// Added out of order (a command logs the steps it ran after its own entry, and an entry's
		// ID need not follow its start): the log is ordered by start, then ID, newest first.
		l := newLog(t)
		tie := operation(9, "p")
		tie.ID, tie.StartedAt = ID(0), at(3) // starts with 3, sorts before it by ID
		for _, op := range []port.LoggedOperation{operation(3, "p"), operation(1, "p"), tie, operation(4, "p"), operation(2, "p")} {
			if err := l.Add(ctx, op); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := opIDs(list(t, l, 0, "")), []string{ID(4), ID(3), ID(0), ID(2), ID(1)}; !slices.Equal(got, want) {
			t.Fatalf("list %v, want %v", got, want)
		}
	})
	t.Run("limit and plan", func(t *testing.T) {
		l := newLog(t)
		for n, p := range []string{"p", "q", "", "p", "q", "p"} {
			if err := l.Add(ctx, operation(n+1, p)); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			limit int
			plan  string
			want  []string
		}{
			{0, "", []string{ID(6), ID(5), ID(4), ID(3), ID(2), ID(1)}},
			{2, "", []string{ID(6), ID(5)}},
			{10, "", []string{ID(6), ID(5), ID(4), ID(3), ID(2), ID(1)}},
			{0, "p", []string{ID(6), ID(4), ID(1)}},
			{2, "p", []string{ID(6), ID(4)}}, // the limit counts the plan's entries only
			{1, "q", []string{ID(5)}},
			{0, "none", []string{}},
		}
		for _, c := range cases {
			if got := opIDs(list(t, l, c.limit, c.plan)); !slices.Equal(got, c.want) {
				t.Errorf("list(limit %d, plan %q) = %v, want %v", c.limit, c.plan, got, c.want)
			}
		}
	})
	t.Run("mark undone", func(t *testing.T) {
		l := newLog(t)
		for n := 1; n <= 2; n++ {
			if err := l.Add(ctx, operation(n, "p")); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.MarkUndone(ctx, ID(1), ID(3)); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkUndone(ctx, ID(9), ID(3)); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("marking a missing entry: %v, want not found", err)
		}
		ops := list(t, l, 0, "")
		want := operation(1, "p")
		want.UndoneBy = ID(3)
		if len(ops) != 2 || diffOperation(ops[1], want) != nil || diffOperation(ops[0], operation(2, "p")) != nil {
			t.Fatalf("after marking %s undone: %+v; want it marked, the other as it was", ID(1), ops)
		}
		// Marked again (a redo undone in turn), it names the latest undo.
		if err := l.MarkUndone(ctx, ID(1), ID(4)); err != nil {
			t.Fatal(err)
		}
		if ops := list(t, l, 0, "p"); ops[1].UndoneBy != ID(4) {
			t.Fatalf("undone by %q, want %s", ops[1].UndoneBy, ID(4))
		}
	})
	t.Run("what a caller holds is not the stored entry", func(t *testing.T) {
		l := newLog(t)
		op := operation(1, "p")
		if err := l.Add(ctx, op); err != nil {
			t.Fatal(err)
		}
		op.Args[0], op.Checkpoints[0] = "changed", cp(999)
		got := list(t, l, 0, "")
		got[0].Args[1] = "changed after list"
		if again := list(t, l, 0, ""); diffOperation(again[0], operation(1, "p")) != nil {
			t.Fatalf("stored entry %+v, want it as added", again[0])
		}
	})
	t.Run("replace", func(t *testing.T) {
		l := newLog(t)
		r, ok := l.(port.OperationReplacer)
		if !ok {
			t.Skip("this log does not replace entries")
		}
		for n := 1; n <= 2; n++ {
			if err := l.Add(ctx, operation(n, "p")); err != nil {
				t.Fatal(err)
			}
		}
		// A new ID is inserted, in its place by start.
		fresh := operation(3, "q")
		fresh.StartedAt = at(1).Add(time.Millisecond)
		if err := r.Replace(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		// An ID there is replaced whole: every field, the start (and so its place) too.
		whole := port.LoggedOperation{ID: ID(2), Kind: "decision", Args: []string{"a"}, Plan: "q", StartedAt: at(0), FinishedAt: at(5), Outcome: "conflict"}
		if err := r.Replace(ctx, whole); err != nil {
			t.Fatal(err)
		}
		ops := list(t, l, 0, "")
		if got, want := opIDs(ops), []string{ID(3), ID(1), ID(2)}; !slices.Equal(got, want) {
			t.Fatalf("after replacing: %v, want %v", got, want)
		}
		if err := diffOperation(ops[2], whole); err != nil {
			t.Fatalf("the replaced entry: %v", err)
		}
		if err := diffOperation(ops[0], fresh); err != nil {
			t.Fatalf("the inserted entry: %v", err)
		}
	})
}
