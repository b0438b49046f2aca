package application

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

func changedDefs() []plan.Definition {
	d := defs("a", "b", "c")
	d[1].Run = "make B"
	d[2].Env = map[string]string{"MODE": "fast"}
	return d
}

func TestRunReportsChangedDecisionsAndKeepsWhatTheyRan(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	for range 2 { // every run reports them again
		e.warnings = nil
		res, err := e.runPlan(t, RunRequest{Decisions: changedDefs()})
		if err != nil {
			t.Fatal(err)
		}
		want := []ChangedDecision{{ID: "b", Fields: []string{"command"}}, {ID: "c", Fields: []string{"env"}}}
		if len(res.Changed) != 2 || res.Changed[0].ID != "b" || !slices.Equal(res.Changed[1].Fields, want[1].Fields) || res.Rerun != nil {
			t.Fatalf("changed: %+v", res.Changed)
		}
		if len(res.Ran) != 0 || len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "b (command), c (env)") ||
			!strings.Contains(e.warnings[0], "--rerun-changed re-executes from b") {
			t.Fatalf("ran %v, warnings %v", res.Ran, e.warnings)
		}
		d, _ := res.Plan.Decision("b")
		if d.Definition().Run != "make b" {
			t.Fatalf("b's definition: %q, want the one it ran with", d.Definition().Run)
		}
	}
	// A validate change counts too; a changed decision that did not succeed is not reported.
	d := defs("a", "b", "c")
	d[0].Validate = "test -f a.txt"
	if res, err := e.runPlan(t, RunRequest{Decisions: d}); err != nil || len(res.Changed) != 1 || res.Changed[0].Fields[0] != "validate" {
		t.Fatalf("%+v, %v", res.Changed, err)
	}
}

func TestRunRerunChanged(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	ranABC(t, e)
	e.putLive("plan.yaml", "v2") // the user's plan file, which no pre_decision checkpoint holds
	res, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"plan.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rerun == nil || !slices.Equal(res.Ran, []string{"b", "c"}) || !slices.Equal(res.Skipped, []string{"a"}) {
		t.Fatalf("rerun %v, ran %v, skipped %v", res.Rerun, res.Ran, res.Skipped)
	}
	if e.liveContent(t, "b.txt") != "make B" || e.liveContent(t, "plan.yaml") != "v2" {
		t.Errorf("b.txt %q, plan.yaml %q", e.liveContent(t, "b.txt"), e.liveContent(t, "plan.yaml"))
	}
	d, _ := res.Plan.Decision("b")
	if d.Definition().Run != "make B" || len(d.Attempts()) != 2 || d.Attempts()[0].Status != plan.Reverted {
		t.Errorf("b: %+v", d.Attempts())
	}
	// Nothing changed any more.
	if res, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true}); err != nil || len(res.Changed) != 0 || res.Rerun != nil {
		t.Errorf("again: %+v, %v", res.Changed, err)
	}
}

func TestRunRerunChangedFailures(t *testing.T) {
	t.Run("without a pre_decision checkpoint", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.writes()
		if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b"), NoCheckpoints: true}); err != nil {
			t.Fatal(err)
		}
		d := defs("a", "b")
		d[0].Run = "new"
		_, err := e.runPlan(t, RunRequest{Decisions: d, NoCheckpoints: true, RerunChanged: true})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "ran without one") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("its checkpoint gone", func(t *testing.T) {
		e := newUseCaseEnv(t)
		p := ranABC(t, e)
		b, _ := p.Decision("b")
		delete(e.repo.cps, latestOf(b).CheckpointID)
		_, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true})
		if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), `pre_decision checkpoint of "b"`) {
			t.Errorf("err = %v", err)
		}
		// Still detected as changed: the definitions it ran with were kept.
		if res, err := e.runPlan(t, RunRequest{Decisions: changedDefs()}); err != nil || len(res.Changed) != 2 {
			t.Errorf("after a failed re-run: %+v, %v", res.Changed, err)
		}
	})
	t.Run("the rollback fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		ranABC(t, e)
		e.snap.err = errors.New("disk gone")
		if _, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"plan.yaml"}}); !errors.Is(err, e.snap.err) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("without keep", func(t *testing.T) {
		e := newUseCaseEnv(t)
		ranABC(t, e)
		res, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true})
		if err != nil || res.Rerun == nil {
			t.Errorf("%v", err)
		}
	})
	t.Run("a bad keep path", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		ranABC(t, e)
		if _, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"../x"}}); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestRollbackKeepingFailures(t *testing.T) {
	t.Run("a kept path in neither tree (ignored)", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		ranABC(t, e)
		if res, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"ignored.yaml"}}); err != nil || res.Rerun == nil {
			t.Errorf("%v", err)
		}
	})
	t.Run("recording the workspace fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		ranABC(t, e)
		e.snap.err = errors.New("disk gone")
		if _, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"plan.yaml"}}); !errors.Is(err, e.snap.err) ||
			!strings.Contains(err.Error(), "record the current state before rolling back") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("storing the tree fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		w := withTrees(e)
		ranABC(t, e)
		e.putLive("plan.yaml", "v2")
		w.err = errors.New("disk full")
		if _, err := e.runPlan(t, RunRequest{Decisions: changedDefs(), RerunChanged: true, Keep: []string{"plan.yaml"}}); !errors.Is(err, w.err) {
			t.Errorf("err = %v", err)
		}
		if got := e.livePaths(); got != "a.txt b.txt c.txt plan.yaml" {
			t.Errorf("the workspace changed: %q", got)
		}
	})
}
