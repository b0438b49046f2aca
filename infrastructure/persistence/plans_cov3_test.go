package persistence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Damaged labels of a stored decision are an integrity error naming the decision, never a plan
// whose decision silently lost its labels.
func TestDamagedDecisionLabelsAreIntegrity(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		plans := NewPlans(db)
		savedPlan(t, plans)
		if err := db.gorm.Exec(`UPDATE decisions SET labels = '{"team":' WHERE id = 'test'`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := plans.ByName(ctx, "release"); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "decision test") {
			t.Fatalf("ByName of a plan with damaged labels: %v", err)
		}
		if _, err := plans.List(ctx); !errors.Is(err, fault.ErrIntegrity) {
			t.Fatalf("List with damaged labels: %v", err)
		}
	})
}

// A save that cannot read the rows it replaces fails and writes nothing: no plan row, no record.
func TestPlanSaveFailsWhenItsRowsCannotBeRead(t *testing.T) {
	for _, table := range []string{"attempts", "decisions"} {
		t.Run(table, func(t *testing.T) {
			ctx := context.Background()
			f := newLedgerFixture(t, 1)
			before, _ := f.names(t)
			dropTable(t, f.db, table)
			p, err := plan.New("000000000001000000000p02", "nightly", "", true, time.Unix(1_700_000_000, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := NewPlans(f.db).Save(ctx, p); err == nil || !strings.Contains(err.Error(), "save plan nightly") {
				t.Fatalf("save: %v", err)
			}
			var n int64
			if err := f.db.gorm.Raw(`SELECT COUNT(*) FROM plans`).Scan(&n).Error; err != nil || n != 0 {
				t.Fatalf("plan rows after a failed save: %d, %v", n, err)
			}
			committed, pending := f.names(t)
			if len(committed) != len(before) || len(pending) != 0 {
				t.Fatalf("records %v (before %v), pending %v", committed, before, pending)
			}
		})
	}
}

// Saving a plan whose attempts are fewer than the stored ones (an older copy saved over a newer
// one) removes the extra attempts, and the record says so: the rebuilt database equals this one,
// and holds no attempt the database lost.
func TestPlanSaveRecordsRemovedAttempts(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 0)
		plans := NewPlans(f.db)
		at := time.Unix(1_700_000_000, 0).UTC()
		p, err := plan.New("000000000001000000000p03", "deploy", "", true, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Define([]plan.Definition{{ID: "build", Run: "make"}}); err != nil {
			t.Fatal(err)
		}
		if err := plans.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
		older, err := plans.ByName(ctx, "deploy")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := p.Start("build", "", "", at.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
			code := 1
			if err := p.Finish("build", plan.Outcome{Status: plan.Failed, ExitCode: &code, ResultTree: tree.Sum([]byte{byte(i)})}, at.Add(time.Duration(i)*time.Minute+time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := plans.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
		f.rebuildMatches(t, dump(t, f.db))
		// Redefined, the older copy is saved whole (a copy saved unchanged writes nothing).
		if err := older.Define([]plan.Definition{{ID: "build", Run: "make"}}); err != nil {
			t.Fatal(err)
		}
		if err := plans.Save(ctx, older); err != nil {
			t.Fatal(err)
		}
		got, err := plans.ByName(ctx, "deploy")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Decisions()[0].Attempts()); n != 0 {
			t.Fatalf("%d attempts after saving the copy without any", n)
		}
		want := dump(t, f.db)
		if len(want["attempts"]) != 0 {
			t.Fatalf("attempt rows: %v", want["attempts"])
		}
		f.rebuildMatches(t, want)
	})
}

// ListSince reports a damaged root as an integrity error, and a read it could not make as an
// error, never as fewer checkpoints.
func TestListSinceFailures(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		repo := NewCheckpoints(db)
		if err := repo.Add(ctx, newCP(t, id1, time.Unix(100, 0))); err != nil {
			t.Fatal(err)
		}
		if err := db.gorm.Exec(`UPDATE checkpoints SET root_tree = 'not-a-hash' WHERE id = ?`, id1).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := repo.ListSince(ctx, time.Unix(50, 0)); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), id1) {
			t.Fatalf("ListSince over a damaged root: %v", err)
		}
		dropTable(t, db, "checkpoints")
		if cps, err := repo.ListSince(ctx, time.Unix(50, 0)); err == nil || !strings.Contains(err.Error(), "list checkpoints") {
			t.Fatalf("ListSince without its table: %v, %v", cps, err)
		}
	})
}
