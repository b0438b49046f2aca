package persistence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "plan.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newCP(t *testing.T, id string, at time.Time, mutate ...func(*checkpoint.Params)) *checkpoint.Checkpoint {
	t.Helper()
	p := checkpoint.Params{
		ID: id, Type: checkpoint.Manual, CreatedAt: at, Root: tree.Sum([]byte(id)),
		Stats: checkpoint.Stats{Files: 3, Bytes: 30, StoredBytes: 12, Duration: 1500 * time.Microsecond},
	}
	for _, m := range mutate {
		m(&p)
	}
	c, err := checkpoint.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	id1 = "0000000000010000000000aa"
	id2 = "0000000000020000000000bb"
	id3 = "0000000000020000000000cc"
)

func TestCheckpointsRoundTrip(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCheckpoints(e.open(t))
		at := time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.FixedZone("X", -7200))
		full := newCP(t, id1, at, func(p *checkpoint.Params) {
			p.Type, p.Note, p.DecisionID = checkpoint.PreDecision, "note with 'quotes' and ünïcode", "build"
			p.ParentID, p.GitCommit = id3, strings.Repeat("ab", 20)
		})
		if err := repo.Add(ctx, full); err != nil {
			t.Fatal(err)
		}
		if err := repo.Add(ctx, full); err == nil {
			t.Error("adding the same checkpoint twice succeeded")
		}
		got, err := repo.Get(ctx, full.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.ID() != full.ID() || got.Type() != full.Type() || got.Note() != full.Note() ||
			got.DecisionID() != "build" || got.ParentID() != id3 || got.GitCommit() != full.GitCommit() ||
			got.Root() != full.Root() || got.Stats() != full.Stats() || !got.CreatedAt().Equal(at) ||
			got.CreatedAt().Location() != time.UTC || got.RollbackCount() != 0 {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, full)
		}
		// Optional fields stay empty (NULL), not "".
		bare := newCP(t, id2, at.Add(time.Second))
		if err := repo.Add(ctx, bare); err != nil {
			t.Fatal(err)
		}
		got, err = repo.Get(ctx, bare.ID())
		if err != nil || got.DecisionID() != "" || got.ParentID() != "" || got.GitCommit() != "" {
			t.Errorf("bare checkpoint: %+v, %v", got, err)
		}
		if _, err := repo.Get(ctx, "ffffffffffffffffffffffff"); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
	})
}

func TestCheckpointsListResolveDelete(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCheckpoints(e.open(t))
		if _, err := repo.Latest(ctx); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("Latest of none: %v", err)
		}
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		// id2 and id3 share a creation time: the ID breaks the tie.
		for _, c := range []*checkpoint.Checkpoint{newCP(t, id2, base.Add(time.Hour)), newCP(t, id1, base), newCP(t, id3, base.Add(time.Hour))} {
			if err := repo.Add(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		list, err := repo.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range list {
			ids = append(ids, string(c.ID()))
		}
		if !slices.Equal(ids, []string{id3, id2, id1}) {
			t.Errorf("List order %v, want newest first", ids)
		}
		if latest, err := repo.Latest(ctx); err != nil || latest.ID() != id3 {
			t.Errorf("Latest = %v, %v", latest, err)
		}
		if c, err := repo.Resolve(ctx, "00000000000100"); err != nil || c.ID() != id1 {
			t.Errorf("Resolve unique prefix = %v, %v", c, err)
		}
		if c, err := repo.Resolve(ctx, id2); err != nil || c.ID() != id2 {
			t.Errorf("Resolve full ID = %v, %v", c, err)
		}
		_, err = repo.Resolve(ctx, "00000000000200")
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), id2) || !strings.Contains(err.Error(), id3) {
			t.Errorf("ambiguous prefix: %v", err)
		}
		if _, err := repo.Resolve(ctx, "abcd"); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("unknown prefix: %v", err)
		}
		if err := repo.Delete(ctx, id2); err != nil {
			t.Fatal(err)
		}
		if err := repo.Delete(ctx, id2); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if c, err := repo.Resolve(ctx, "00000000000200"); err != nil || c.ID() != id3 {
			t.Errorf("after delete the prefix is unique: %v, %v", c, err)
		}
	})
}

func TestCheckpointsUpdate(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCheckpoints(e.open(t))
		if err := repo.Add(ctx, newCP(t, id1, time.Now())); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := repo.Update(ctx, id1, func(c *checkpoint.Checkpoint) error { c.RecordRollback(); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		boom := errors.New("refused")
		if err := repo.Update(ctx, id1, func(c *checkpoint.Checkpoint) error { c.RecordRollback(); return boom }); !errors.Is(err, boom) {
			t.Errorf("Update with a failing fn = %v", err)
		}
		if c, _ := repo.Get(ctx, id1); c.RollbackCount() != 3 {
			t.Errorf("rollback count %d, want 3 (the failed update must not count)", c.RollbackCount())
		}
		if err := repo.Update(ctx, "ffffffffffffffffffffffff", func(*checkpoint.Checkpoint) error { return nil }); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("Update of a missing checkpoint: %v", err)
		}
	})
}

// TestTransactorIsAtomic: a finisher's updates commit together or not at all; that is what makes
// "record the rollback" a single commit point.
func TestTransactorIsAtomic(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		repo, hist, tx := NewCheckpoints(db), NewHistory(db), NewTransactor(db)
		if err := repo.Add(ctx, newCP(t, id1, time.Now())); err != nil {
			t.Fatal(err)
		}
		rec := port.HistoryRecord{ID: "op1", Kind: "rollback", TargetCheckpoint: id1, BackupCheckpoint: id2,
			StartedAt: time.Now(), FinishedAt: time.Now()}
		boom := errors.New("crash before commit")
		err := tx.Do(ctx, func(ctx context.Context) error {
			if err := repo.Update(ctx, id1, func(c *checkpoint.Checkpoint) error { c.RecordRollback(); return nil }); err != nil {
				return err
			}
			if err := hist.Record(ctx, rec); err != nil {
				return err
			}
			// Nested units of work join the outer one.
			if err := tx.Do(ctx, func(ctx context.Context) error { return repo.Delete(ctx, id1) }); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Do = %v", err)
		}
		c, err := repo.Get(ctx, id1)
		if err != nil || c.RollbackCount() != 0 {
			t.Fatalf("after a failed transaction: %v, %v; want the checkpoint untouched", c, err)
		}
		if has, _ := hist.Has(ctx, "op1"); has {
			t.Fatal("history recorded by a failed transaction")
		}
		if err := tx.Do(ctx, func(ctx context.Context) error {
			if err := repo.Update(ctx, id1, func(c *checkpoint.Checkpoint) error { c.RecordRollback(); return nil }); err != nil {
				return err
			}
			return hist.Record(ctx, rec)
		}); err != nil {
			t.Fatal(err)
		}
		if c, _ := repo.Get(ctx, id1); c.RollbackCount() != 1 {
			t.Errorf("committed count %d", c.RollbackCount())
		}
		if has, _ := hist.Has(ctx, "op1"); !has {
			t.Error("committed history missing")
		}
	})
}

func TestHistory(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		h := NewHistory(e.open(t))
		t0 := time.Date(2025, 2, 3, 4, 5, 6, 7, time.UTC)
		recs := []port.HistoryRecord{
			{ID: "b", Kind: "rollback", TargetCheckpoint: id1, BackupCheckpoint: id2, StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(2 * time.Minute), Added: 1, Modified: 2, Deleted: 3, Reverted: []string{"d1", "d2"}},
			{ID: "a", Kind: "correction", TargetCheckpoint: id2, BackupCheckpoint: id3, StartedAt: t0, FinishedAt: t0.Add(time.Second)},
		}
		for _, r := range recs {
			if err := h.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Record(ctx, recs[0]); err == nil {
			t.Error("recording the same operation twice succeeded")
		}
		got, err := h.Get(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != "rollback" || got.TargetCheckpoint != id1 || got.BackupCheckpoint != id2 || !got.StartedAt.Equal(recs[0].StartedAt) ||
			!got.FinishedAt.Equal(recs[0].FinishedAt) || got.Added != 1 || got.Modified != 2 || got.Deleted != 3 || !slices.Equal(got.Reverted, []string{"d1", "d2"}) {
			t.Errorf("round trip %+v", got)
		}
		if a, _ := h.Get(ctx, "a"); a.Reverted == nil || len(a.Reverted) != 0 {
			t.Errorf("no reverted decisions should read back as an empty list, got %#v", a.Reverted)
		}
		if _, err := h.Get(ctx, "zzz"); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
		for id, want := range map[string]bool{"a": true, "b": true, "c": false} {
			if has, err := h.Has(ctx, id); err != nil || has != want {
				t.Errorf("Has(%s) = %v, %v", id, has, err)
			}
		}
		list, err := h.List(ctx)
		if err != nil || len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
			t.Errorf("List = %+v, %v; want oldest first", list, err)
		}
	})
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.db")
	if _, err := Open(ctx, path, false); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
		t.Errorf("missing database without create: %v", err)
	}
	db, err := Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewCheckpoints(db).Add(ctx, newCP(t, id1, time.Now())); err != nil {
		t.Fatal(err)
	}
	if problems, err := db.IntegrityCheck(ctx); err != nil || len(problems) != 0 {
		t.Errorf("IntegrityCheck = %v, %v", problems, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening keeps the data and does not migrate twice.
	db, err = Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCheckpoints(db).Get(ctx, id1); err != nil {
		t.Errorf("data lost on reopen: %v", err)
	}
	// A schema newer than this binary is refused.
	if err := db.gorm.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (9999, 'future', 0)`).Error; err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(ctx, path, false); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("newer schema: %v", err)
	}

	// Garbage where the database should be is integrity damage with a repair hint.
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte(strings.Repeat("this is not a database ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, bad, false); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
		t.Errorf("garbage database: %v", err)
	}
}

func TestDamagedRootReference(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		repo := NewCheckpoints(db)
		if err := repo.Add(ctx, newCP(t, id1, time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := db.gorm.Exec(`UPDATE checkpoints SET root_tree = 'not-a-hash' WHERE id = ?`, id1).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(ctx, id1); !errors.Is(err, fault.ErrIntegrity) {
			t.Errorf("Get = %v, want ErrIntegrity", err)
		}
		if _, err := repo.List(ctx); !errors.Is(err, fault.ErrIntegrity) {
			t.Errorf("List = %v, want ErrIntegrity", err)
		}
	})
}
