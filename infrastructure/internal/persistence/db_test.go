package persistence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// A database that an initialised workspace should have filled is never taken for a fresh one:
// a zero-byte file, a database without plan's schema, or one missing a table its version promises
// is an integrity error naming the repair, unless the caller allows a fresh start.
func TestOpenRefusesAnEmptyOrIncompleteDatabase(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, path string){
		"zero bytes": func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"another schema": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DROP TABLE schema_migrations`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
		"a table dropped": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DROP TABLE attempts`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
		"no version": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DELETE FROM schema_migrations`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.db")
			damage(t, path)
			_, err := Open(ctx, path, false)
			if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
				t.Fatalf("Open = %v, want an integrity error naming plan doctor", err)
			}
		})
	}
	// The same zero-byte file may start fresh when the caller says nothing can be lost.
	path := filepath.Join(t.TempDir(), "plan.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := mustOpen(t, path, true)
	_ = db.Close()
	// And once filled it opens without create.
	db = mustOpen(t, path, false)
	_ = db.Close()
}

func mustOpen(t *testing.T, path string, create bool) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, create)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// A result tree is typed in the domain; damage to its stored text is found once, by the mapper,
// as an integrity error naming the attempt (the use cases no longer re-parse it).
func TestDamagedResultTreeIsIntegrity(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		plans := NewPlans(db)
		p, err := plan.New("p1", "p", "", true, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(plan.Definition{ID: "a", Run: "true"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Start("a", checkpoint.ID("cp"), "", time.Now()); err != nil {
			t.Fatal(err)
		}
		result := tree.Sum([]byte("result"))
		if err := p.Finish("a", plan.Outcome{Status: plan.Succeeded, ResultTree: result}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := plans.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
		got, err := plans.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := got.Decision("a")
		if a, _ := d.Latest(); a.ResultTree != result || a.CheckpointID != "cp" {
			t.Fatalf("round trip: %+v", a)
		}
		if err := db.gorm.Exec(`UPDATE attempts SET result_tree = 'garbage'`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := plans.Current(ctx); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "result tree of a attempt 1") {
			t.Fatalf("damaged result tree: %v", err)
		}
	})
}

// Failed checkpoints are counted for stats, and survive reopening.
func TestCheckpointFailureMetrics(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plan.db")
	db := mustOpen(t, path, true)
	m := NewMetrics(db)
	if n, err := m.CheckpointFailures(ctx); err != nil || n != 0 {
		t.Fatalf("none yet: %d, %v", n, err)
	}
	for range 2 {
		if err := m.RecordCheckpointFailure(ctx, time.Now(), "disk full"); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	db = mustOpen(t, path, false)
	defer db.Close()
	if n, err := NewMetrics(db).CheckpointFailures(ctx); err != nil || n != 2 {
		t.Fatalf("after reopening: %d, %v", n, err)
	}
}

// Plans are listed most recently saved first.
func TestPlansList(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		plans := NewPlans(e.open(t))
		if ps, err := plans.List(ctx); err != nil || len(ps) != 0 {
			t.Fatalf("no plans: %v, %v", ps, err)
		}
		for i, name := range []string{"alpha", "beta", "alpha"} {
			p, err := plans.ByName(ctx, name)
			if err != nil {
				if p, err = plan.New(fmt.Sprintf("%024d", i), name, "", true, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if err := plans.Save(ctx, p); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		ps, err := plans.List(ctx)
		if err != nil || len(ps) != 2 || ps[0].Name() != "alpha" || ps[1].Name() != "beta" {
			t.Fatalf("list: %v, %v; want alpha (saved last), then beta", ps, err)
		}
	})
}

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
