package persistence

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// savedPlan stores a plan whose decisions cover what a row must carry: env, timeout, a finished
// attempt with exit code and artifacts, a second attempt still running, and a skipped decision.
func savedPlan(t *testing.T, plans *Plans) *plan.Plan {
	t.Helper()
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 5).UTC()
	p, err := plan.New("000000000001000000000p01", "release", "plan.yaml", true, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Define([]plan.Definition{
		{ID: "build", Name: "Build", Run: "make", Timeout: 90 * time.Second, Env: map[string]string{"CC": "clang", "EMPTY": ""}},
		{ID: "test", Run: "make test"},
		{ID: "ship", Run: "make ship"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("build", checkpoint.ID(id1), "logs/build-1.log", at); err != nil {
		t.Fatal(err)
	}
	code := 2
	if err := p.Finish("build", plan.Outcome{
		Status: plan.Failed, ExitCode: &code, ResultTree: tree.Sum([]byte("r1")),
		Artifacts: []artifact.Artifact{{Path: "bin/app", Change: tree.Modified, Size: 7, SHA256: strings.Repeat("b", 64)}},
	}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("build", checkpoint.ID(id2), "logs/build-2.log", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

type decisionView struct {
	Def      plan.Definition
	Status   plan.Status
	Attempts []plan.Attempt
}

func viewOf(p *plan.Plan) []decisionView {
	var out []decisionView
	for _, d := range p.Decisions() {
		v := decisionView{Def: d.Definition(), Status: d.Status(), Attempts: d.Attempts()}
		// No env and no artifacts read back as empty rather than nil; both mean none.
		if len(v.Def.Env) == 0 {
			v.Def.Env = nil
		}
		for i := range v.Attempts {
			if len(v.Attempts[i].Artifacts) == 0 {
				v.Attempts[i].Artifacts = nil
			}
		}
		out = append(out, v)
	}
	return out
}

// A plan reads back exactly as saved: definitions with their env and timeout, every attempt with
// its exit code (nil while running), times, artifacts, checkpoint and log. Recovery and corrections
// decide what to revert and re-execute from these fields.
func TestPlansRoundTrip(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		plans := NewPlans(e.open(t))
		if _, err := plans.Current(ctx); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("current with no plan: %v", err)
		}
		if _, err := plans.ByName(ctx, "release"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("by name with no plan: %v", err)
		}
		want := savedPlan(t, plans)
		for what, get := range map[string]func() (*plan.Plan, error){
			"Current": func() (*plan.Plan, error) { return plans.Current(ctx) },
			"ByName":  func() (*plan.Plan, error) { return plans.ByName(ctx, "release") },
		} {
			got, err := get()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got.ID() != want.ID() || got.Name() != want.Name() || got.Source() != want.Source() ||
				got.Checkpoints() != want.Checkpoints() || !got.CreatedAt().Equal(want.CreatedAt()) {
				t.Fatalf("%s: plan fields %s %s %s %v %v", what, got.ID(), got.Name(), got.Source(), got.Checkpoints(), got.CreatedAt())
			}
			if g, w := viewOf(got), viewOf(want); !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: decisions\n got  %+v\n want %+v", what, g, w)
			}
		}
		// Skipping is stored too, and a second save replaces the decisions rather than adding to them.
		want.SkipPending("build")
		if err := plans.Save(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := plans.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := viewOf(got), viewOf(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("after skipping:\n got  %+v\n want %+v", g, w)
		}
	})
}

// Damage to a stored plan's env or artifacts, or to an operation's record of reverted decisions,
// is an integrity error (what sends the user to `plan doctor`), not an unclassified failure.
func TestDamagedPlanAndHistoryRowsAreIntegrity(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, tc := range []struct{ name, stmt, want string }{
			{"env", `UPDATE decisions SET env = '{"CC":' WHERE id = 'build'`, "build"},
			{"artifacts", `UPDATE attempts SET artifacts = 'nope' WHERE number = 1`, "build attempt 1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db := e.open(t)
				plans := NewPlans(db)
				savedPlan(t, plans)
				if err := db.gorm.Exec(tc.stmt).Error; err != nil {
					t.Fatal(err)
				}
				for what, get := range map[string]func() error{
					"Current": func() error { _, err := plans.Current(ctx); return err },
					"ByName":  func() error { _, err := plans.ByName(ctx, "release"); return err },
					"List":    func() error { _, err := plans.List(ctx); return err },
				} {
					if err := get(); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("%s of a damaged plan: %v", what, err)
					}
				}
			})
		}
		t.Run("history", func(t *testing.T) {
			db := e.open(t)
			h := NewHistory(db)
			if err := h.Record(ctx, port.HistoryRecord{ID: "op1", Kind: "rollback", Reverted: []string{"a"}}); err != nil {
				t.Fatal(err)
			}
			if err := db.gorm.Exec(`UPDATE history SET reverted = '["a"'`).Error; err != nil {
				t.Fatal(err)
			}
			if _, err := h.Get(ctx, "op1"); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "op1") {
				t.Fatalf("Get of a damaged operation: %v", err)
			}
			if _, err := h.List(ctx); !errors.Is(err, fault.ErrIntegrity) {
				t.Fatalf("List with a damaged operation: %v", err)
			}
		})
	})
}

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
