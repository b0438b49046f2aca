package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// statementCounter counts the statements a DB runs and the rows they read or wrote.
type statementCounter struct{ statements, rows int64 }

func countStatements(t *testing.T, d *DB) *statementCounter {
	t.Helper()
	c := &statementCounter{}
	count := func(db *gorm.DB) {
		c.statements++
		c.rows += db.Statement.RowsAffected
	}
	cb := d.gorm.Callback()
	for i, err := range []error{
		cb.Query().After("gorm:query").Register("test:count_query", count),
		cb.Create().After("gorm:create").Register("test:count_create", count),
		cb.Update().After("gorm:update").Register("test:count_update", count),
		cb.Delete().After("gorm:delete").Register("test:count_delete", count),
		cb.Row().After("gorm:row").Register("test:count_row", count),
		cb.Raw().After("gorm:raw").Register("test:count_raw", count),
	} {
		if err != nil {
			t.Fatalf("callback %d: %v", i, err)
		}
	}
	return c
}

// toolCall records one agent tool call as a hook does: the session with that call alone, the call
// recorded, saved; read again, finished, saved.
func toolCall(t *testing.T, plans *Plans, i int, at time.Time) {
	t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("toolu_%05d", i)
	p, err := plans.Partial(ctx, "claude-s1", []string{id})
	if err != nil {
		t.Fatal(err)
	}
	def := plan.Definition{ID: id, Name: "Bash", Run: "Bash: step", Labels: map[string]string{"turn": "1"}}
	if _, err := p.RecordOutside(def, checkpoint.ID(id1), at); err != nil {
		t.Fatal(err)
	}
	if err := plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	if p, err = plans.Partial(ctx, "claude-s1", []string{id}); err != nil {
		t.Fatal(err)
	}
	if err := p.FinishOutside(id, plan.Outcome{Status: plan.Succeeded, ResultTree: tree.Sum([]byte(id))}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// A tool call of a long session reads and writes what one of a short session does: the same
// statements, the same rows. (Each decision of a run once rewrote the whole plan: 36 ms at 50
// decisions, 80 ms at 400.) Counting rows, not time, makes the guard exact.
func TestToolCallCostDoesNotGrowWithTheSession(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		f := newLedgerFixtureOn(t, e, 0)
		plans := NewPlans(f.db)
		ctx := context.Background()
		at := time.Unix(1_700_000_000, 0).UTC()
		p, err := plan.New("000000000001000000000s01", "claude-s1", "agent claude session s1", true, at)
		if err != nil {
			t.Fatal(err)
		}
		p.OpenTurn("go", checkpoint.ID(id1), at)
		if err := plans.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
		c := countStatements(t, f.db)
		measure := func(i int) statementCounter {
			before := *c
			toolCall(t, plans, i, at.Add(time.Duration(i)*time.Minute))
			return statementCounter{c.statements - before.statements, c.rows - before.rows}
		}
		early := measure(0)
		for i := 1; i < 300; i++ {
			toolCall(t, plans, i, at.Add(time.Duration(i)*time.Minute))
		}
		late := measure(300)
		if early != late || early.statements == 0 {
			t.Fatalf("tool call 1 ran %d statements over %d rows; tool call 301 ran %d over %d", early.statements, early.rows, late.statements, late.rows)
		}
		got, err := plans.ByName(ctx, "claude-s1")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Decisions()); n != 301 || got.Decisions()[300].ID() != "toolu_00300" || got.Decisions()[0].Kind() != plan.Outside {
			t.Fatalf("%d decisions, last %s", n, got.Decisions()[n-1].ID())
		}
		if turns := got.Turns(); len(turns) != 1 || turns[0].Prompt != "go" || turns[0].Start != checkpoint.ID(id1) {
			t.Fatalf("turns: %+v", turns)
		}
		// The records of these saves rebuild the same database.
		f.rebuildMatches(t, dump(t, f.db))
	})
}

func TestPartialPlansAndRunningDecisions(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		plans := NewPlans(e.open(t))
		if _, err := plans.Partial(ctx, "none", nil); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("partial of no plan: %v", err)
		}
		if names, err := plans.RunningExecuted(ctx); err != nil || len(names) != 0 {
			t.Fatalf("running in an empty database: %v %v", names, err)
		}
		at := time.Unix(1_700_000_000, 0).UTC()
		s, _ := plan.New("000000000001000000000s02", "claude-s2", "agent claude session s2", true, at)
		if _, err := s.RecordOutside(plan.Definition{ID: "toolu_A", Run: "Edit: a"}, checkpoint.ID(id1), at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordOutside(plan.Definition{ID: "toolu_B", Run: "Edit: b"}, checkpoint.ID(id1), at); err != nil {
			t.Fatal(err)
		}
		if err := plans.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		// Tool calls running in their agent are not plan's running decisions.
		if names, err := plans.RunningExecuted(ctx); err != nil || len(names) != 0 {
			t.Fatalf("running with tool calls only: %v %v", names, err)
		}
		savedPlan(t, plans) // "release", its build running
		if names, err := plans.RunningExecuted(ctx); err != nil || !slices.Equal(names, []string{"release"}) {
			t.Fatalf("running: %v %v", names, err)
		}
		p, err := plans.Partial(ctx, "claude-s2", []string{"toolu_B", "nope"})
		if err != nil || !p.Partial() || len(p.Decisions()) != 1 || p.Decisions()[0].ID() != "toolu_B" {
			t.Fatalf("partial: %v %v", p, err)
		}
		if p, err := plans.Partial(ctx, "claude-s2", nil); err != nil || len(p.Decisions()) != 0 {
			t.Fatalf("partial without decisions: %v", err)
		}
		// A partial plan of a plan never stored has nothing to add to.
		ghost := plan.RehydratePartial("000000000001000000000s09", "ghost", "", true, at, nil, nil)
		if _, err := ghost.RecordOutside(plan.Definition{ID: "x", Run: "y"}, "", at); err != nil {
			t.Fatal(err)
		}
		if err := plans.Save(ctx, ghost); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("save of an unstored partial plan: %v", err)
		}
		// Damaged turns are damage, not an empty session.
		if err := plans.db.gorm.Exec(`UPDATE plans SET turns = '{' WHERE name = 'claude-s2'`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := plans.ByName(ctx, "claude-s2"); !errors.Is(err, fault.ErrIntegrity) {
			t.Fatalf("damaged turns: %v", err)
		}
		if err := plans.db.gorm.Exec(`UPDATE plans SET turns = '' WHERE name = 'claude-s2'`).Error; err != nil {
			t.Fatal(err)
		}
		if p, err := plans.ByName(ctx, "claude-s2"); err != nil || len(p.Turns()) != 0 {
			t.Fatalf("no turns: %v", err)
		}
	})
}
