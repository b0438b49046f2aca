// Package plantest is the behaviour every plan.Repository must have, as one test suite that the
// gorm adapter and the use cases' in-memory fake both run, so the fake cannot drift from what
// production does (checkpointtest does the same for checkpoints). It lives in non-test files so
// both packages' tests can call it.
package plantest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// base is the time the suite's plans start at: not UTC and with nanoseconds, which a repository
// must keep (as UTC) to the nanosecond.
var base = time.Date(2025, 6, 1, 14, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

// at is n seconds after base.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// cp is the n-th checkpoint ID (24 hex characters).
func cp(n int) checkpoint.ID { return checkpoint.ID(fmt.Sprintf("cccc%020d", n)) }

// New returns a new, empty plan called name with the given decisions (ID and command pairs).
func New(t testing.TB, name string, ids ...string) *plan.Plan {
	t.Helper()
	p, err := plan.New("id-"+name, name, "plans/"+name+".yaml", true, base)
	if err != nil {
		t.Fatal(err)
	}
	defs := make([]plan.Definition, len(ids))
	for i, id := range ids {
		defs[i] = plan.Definition{ID: id, Run: "make " + id}
	}
	if err := p.Define(defs); err != nil {
		t.Fatal(err)
	}
	return p
}

// full is a plan that uses every field a repository stores: decisions of both kinds with every
// definition field, attempts finished, running, failed and reverted, artifacts, a skipped
// decision, and turns open and closed.
func full(t testing.TB) *plan.Plan {
	t.Helper()
	p, err := plan.New("id-full", "full", "plans/full.yaml", true, base)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Define([]plan.Definition{
		{
			ID: "build", Name: "Build it", Run: "make build", Timeout: 90 * time.Second,
			Env: map[string]string{"GOOS": "linux", "EMPTY": ""}, Labels: map[string]string{"phase": "one", "task": "t-1"},
			Retries: 2, OnFailure: "rollback", Validate: "make check",
		},
		{ID: "test", Run: "make test", OnFailure: "continue"},
		{ID: "lint", Run: "make lint"},
		{ID: "ship", Run: "make ship"},
	}))
	p.OpenTurn("first prompt", cp(1), at(1))
	if _, err := p.Start("build", cp(2), "logs/build-1.log", at(2)); err != nil {
		t.Fatal(err)
	}
	zero, one := 0, 1
	must(p.Finish("build", plan.Outcome{Status: plan.Failed, ExitCode: &one}, at(3)))
	if _, err := p.Start("build", cp(3), "logs/build-2.log", at(4)); err != nil {
		t.Fatal(err)
	}
	must(p.Finish("build", plan.Outcome{
		Status: plan.Succeeded, ExitCode: &zero, ResultTree: tree.Sum([]byte("after build")),
		Artifacts: []artifact.Artifact{
			{Path: "bin/app", Change: tree.Added, Size: 1234, SHA256: tree.Sum([]byte("app")).String()},
			{Path: "old.txt", Change: tree.Deleted, Size: 5, SHA256: tree.Sum([]byte("old")).String()},
			{Path: "dir", Change: tree.Added},
		},
	}, at(5)))
	if _, err := p.Start("test", "", "logs/test-1.log", at(6)); err != nil { // checkpoints were off
		t.Fatal(err)
	}
	must(p.Finish("test", plan.Outcome{Status: plan.Interrupted}, at(7))) // no exit code
	if got := p.RevertStartedSince(at(6), "op-revert"); !slices.Equal(got, []string{"test"}) {
		t.Fatalf("reverted %v", got)
	}
	p.SkipPending("test") // lint and ship
	p.CloseTurn(cp(4), at(8))
	if _, err := p.RecordOutside(plan.Definition{ID: "toolu_01AbC", Run: "Bash: ls", Labels: map[string]string{"agent": "claude"}}, cp(5), at(9)); err != nil {
		t.Fatal(err)
	}
	p.OpenTurn("second prompt", cp(6), at(10)) // left open
	if _, err := p.RecordOutside(plan.Definition{ID: "call_2", Run: "Edit: a.go"}, cp(7), at(11)); err != nil {
		t.Fatal(err)
	}
	must(p.FinishOutside("call_2", plan.Outcome{Status: plan.Succeeded, ResultTree: tree.Sum([]byte("edited"))}, at(12)))
	return p
}

// Same fails t unless got is want as a repository should give it back: every field, decisions in
// order, attempts oldest first, times to the nanosecond (as UTC). Empty and nil maps are the same.
func Same(t testing.TB, got, want *plan.Plan) {
	t.Helper()
	if err := diff(got, want); err != nil {
		t.Fatalf("plan %s: %v", want.Name(), err)
	}
}

func diff(got, want *plan.Plan) error {
	switch {
	case got.ID() != want.ID() || got.Name() != want.Name() || got.Source() != want.Source():
		return fmt.Errorf("got ID, name, source %q %q %q, want %q %q %q", got.ID(), got.Name(), got.Source(), want.ID(), want.Name(), want.Source())
	case got.Checkpoints() != want.Checkpoints():
		return fmt.Errorf("checkpoints %v, want %v", got.Checkpoints(), want.Checkpoints())
	case !got.CreatedAt().Equal(want.CreatedAt()) || got.CreatedAt().Location() != time.UTC:
		return fmt.Errorf("created at %v, want %v in UTC", got.CreatedAt(), want.CreatedAt())
	}
	gt, wt := got.Turns(), want.Turns()
	if len(gt) != len(wt) {
		return fmt.Errorf("%d turns, want %d", len(gt), len(wt))
	}
	for i := range wt {
		g, w := gt[i], wt[i]
		if g.Number != w.Number || g.Prompt != w.Prompt || g.Start != w.Start || g.End != w.End ||
			!g.StartedAt.Equal(w.StartedAt) || !g.EndedAt.Equal(w.EndedAt) || g.EndedAt.IsZero() != w.EndedAt.IsZero() {
			return fmt.Errorf("turn %d: got %+v, want %+v", i+1, g, w)
		}
	}
	gd, wd := got.Decisions(), want.Decisions()
	if ids(gd) != ids(wd) {
		return fmt.Errorf("decisions %s, want %s", ids(gd), ids(wd))
	}
	for i := range wd {
		if err := diffDecision(gd[i], wd[i]); err != nil {
			return fmt.Errorf("decision %s: %w", wd[i].ID(), err)
		}
	}
	return nil
}

func diffDecision(got, want *plan.Decision) error {
	g, w := got.Definition(), want.Definition()
	if g.ID != w.ID || g.Kind != w.Kind || g.Name != w.Name || g.Run != w.Run || g.Timeout != w.Timeout ||
		!maps.Equal(g.Env, w.Env) || !maps.Equal(g.Labels, w.Labels) || g.Retries != w.Retries ||
		g.OnFailure != w.OnFailure || g.Validate != w.Validate {
		return fmt.Errorf("definition %+v, want %+v", g, w)
	}
	if got.Status() != want.Status() || got.Kind() != want.Kind() {
		return fmt.Errorf("status %s (kind %q), want %s (kind %q)", got.Status(), got.Kind(), want.Status(), want.Kind())
	}
	if gb, gf, _ := got.Corrected(); true {
		if wb, wf, _ := want.Corrected(); gb != wb || gf != wf {
			return fmt.Errorf("corrected by %q (the file's command %q), want %q (%q)", gb, gf, wb, wf)
		}
	}
	ga, wa := got.Attempts(), want.Attempts()
	if len(ga) != len(wa) {
		return fmt.Errorf("%d attempts, want %d", len(ga), len(wa))
	}
	for i := range wa {
		g, w := ga[i], wa[i]
		sameExit := (g.ExitCode == nil) == (w.ExitCode == nil) && (g.ExitCode == nil || *g.ExitCode == *w.ExitCode)
		if g.Number != w.Number || g.Status != w.Status || g.Command != w.Command || g.CheckpointID != w.CheckpointID ||
			g.ResultTree != w.ResultTree || !sameExit || !g.StartedAt.Equal(w.StartedAt) || !g.FinishedAt.Equal(w.FinishedAt) ||
			g.FinishedAt.IsZero() != w.FinishedAt.IsZero() || !slices.Equal(g.Artifacts, w.Artifacts) ||
			g.RevertedBy != w.RevertedBy || g.RevertedFrom != w.RevertedFrom || g.LogPath != w.LogPath {
			return fmt.Errorf("attempt %d: got %+v, want %+v", w.Number, g, w)
		}
	}
	return nil
}

func ids(ds []*plan.Decision) string {
	s := ""
	for _, d := range ds {
		s += d.ID() + " "
	}
	return s
}

func names(ps []*plan.Plan) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// Repository runs the suite against fresh repositories made by newRepo.
func Repository(t *testing.T, newRepo func(t *testing.T) plan.Repository) {
	ctx := context.Background()
	save := func(t *testing.T, r plan.Repository, p *plan.Plan) {
		t.Helper()
		if err := r.Save(ctx, p); err != nil {
			t.Fatalf("save %s: %v", p.Name(), err)
		}
	}
	byName := func(t *testing.T, r plan.Repository, name string) *plan.Plan {
		t.Helper()
		p, err := r.ByName(ctx, name)
		if err != nil {
			t.Fatalf("by name %s: %v", name, err)
		}
		return p
	}
	t.Run("none yet", func(t *testing.T) {
		r := newRepo(t)
		if _, err := r.Current(ctx); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("current of none: %v, want not found", err)
		}
		if _, err := r.ByName(ctx, "p"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("a missing name: %v, want not found", err)
		}
		if _, err := r.Partial(ctx, "p", []string{"a"}); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("partial of a missing name: %v, want not found", err)
		}
		if l, err := r.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("list of none: %v, %v", names(l), err)
		}
		if n, err := r.RunningExecuted(ctx); err != nil || len(n) != 0 {
			t.Fatalf("running of none: %v, %v", n, err)
		}
	})
	t.Run("round trip of every field", func(t *testing.T) {
		r := newRepo(t)
		want := full(t)
		save(t, r, want)
		Same(t, byName(t, r, "full"), want)
		cur, err := r.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		Same(t, cur, want)
		l, err := r.List(ctx)
		if err != nil || len(l) != 1 {
			t.Fatalf("list: %v, %v", names(l), err)
		}
		Same(t, l[0], want)
		// What was loaded saves back unchanged, and a change made to it after is kept too.
		got := byName(t, r, "full")
		save(t, r, got)
		Same(t, byName(t, r, "full"), want)
		if err := got.FinishOutside("toolu_01AbC", plan.Outcome{Status: plan.Failed}, at(13)); err != nil {
			t.Fatal(err)
		}
		got.SetCheckpoints(false)
		got.CloseTurn(cp(8), at(14))
		save(t, r, got)
		Same(t, byName(t, r, "full"), got)
	})
	t.Run("changes not saved are not stored", func(t *testing.T) {
		r := newRepo(t)
		save(t, r, New(t, "p", "a", "b"))
		p := byName(t, r, "p")
		if _, err := p.Start("a", cp(1), "", at(1)); err != nil {
			t.Fatal(err)
		}
		p.OpenTurn("unsaved", cp(1), at(1))
		stored := byName(t, r, "p")
		if a, _ := stored.Decision("a"); a.Status() != plan.Pending || len(stored.Turns()) != 0 {
			t.Fatalf("a plan changed after it was loaded, not saved: the store has a %s, %d turns; want it as saved", a.Status(), len(stored.Turns()))
		}
		// Nor does a change to the plan after it was saved reach the store.
		q := New(t, "q", "x")
		save(t, r, q)
		if _, err := q.Start("x", cp(1), "", at(1)); err != nil {
			t.Fatal(err)
		}
		if x, _ := byName(t, r, "q").Decision("x"); x.Status() != plan.Pending {
			t.Fatalf("a plan changed after it was saved: the store has x %s, want pending", x.Status())
		}
	})
	t.Run("every change a plan makes is stored", func(t *testing.T) {
		// Each step loads the plan, changes it through one of its methods, saves it and loads it
		// again: a repository that saves only what changed (plan.Changes) must be told of each.
		r := newRepo(t)
		save(t, r, New(t, "p", "a", "b", "c"))
		want := byName(t, r, "p") // the same changes, made to a plan kept in memory
		step := func(name string, change func(p *plan.Plan) error) {
			t.Helper()
			p := byName(t, r, "p")
			if err := change(p); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			save(t, r, p)
			if err := change(want); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := diff(byName(t, r, "p"), want); err != nil {
				t.Fatalf("after %s the store has: %v", name, err)
			}
		}
		zero := 0
		for i, id := range []string{"a", "b"} {
			step("start "+id, func(p *plan.Plan) error { _, err := p.Start(id, cp(i+1), "logs/"+id, at(10*i+1)); return err })
			step("finish "+id, func(p *plan.Plan) error {
				return p.Finish(id, plan.Outcome{Status: plan.Succeeded, ExitCode: &zero, ResultTree: tree.Sum([]byte(id))}, at(10*i+2))
			})
		}
		step("skip pending", func(p *plan.Plan) error { p.SkipPending("b"); return nil })
		step("set checkpoints", func(p *plan.Plan) error { p.SetCheckpoints(false); return nil })
		step("open a turn", func(p *plan.Plan) error { p.OpenTurn("hi", cp(5), at(30)); return nil })
		step("close a turn", func(p *plan.Plan) error { p.CloseTurn(cp(6), at(31)); return nil })
		step("revert started since", func(p *plan.Plan) error { p.RevertStartedSince(at(1), "op-rollback"); return nil })
		step("unrevert", func(p *plan.Plan) error { p.Unrevert("op-rollback"); return nil })
		step("rerevert", func(p *plan.Plan) error { p.Rerevert([]string{"a", "b"}, at(40), "op-redo"); return nil })
		step("unrevert the redo", func(p *plan.Plan) error { p.Unrevert("op-redo"); return nil })
		step("revert one", func(p *plan.Plan) error { return p.RevertOne("b", "op-surgical") })
		step("redefine", func(p *plan.Plan) error { return p.Redefine("b", "make b better", "fix") })
		step("append", func(p *plan.Plan) error { _, err := p.Append(plan.Definition{ID: "d", Run: "make d"}); return err })
		step("record outside", func(p *plan.Plan) error {
			_, err := p.RecordOutside(plan.Definition{ID: "call_1", Run: "Bash: ls"}, cp(7), at(50))
			return err
		})
		step("finish outside", func(p *plan.Plan) error {
			return p.FinishOutside("call_1", plan.Outcome{Status: plan.Failed}, at(51))
		})
		if b, _ := want.Decision("b"); b.Status() != plan.Reverted || b.Definition().Run != "make b better" {
			t.Fatalf("the steps left b %s, %q", b.Status(), b.Definition().Run)
		}
		if b, _ := want.Decision("b"); true {
			if by, file, ok := b.Corrected(); !ok || by != "fix" || file != "make b" {
				t.Fatalf("the steps left b corrected by %q over %q (%v), want fix over make b", by, file, ok)
			}
		}
	})
	t.Run("decision order", func(t *testing.T) {
		r := newRepo(t)
		p := New(t, "p", "c", "a", "b")
		save(t, r, p)
		p = byName(t, r, "p")
		if ids(p.Decisions()) != "c a b " {
			t.Fatalf("decisions %s, want the plan's order c a b", ids(p.Decisions()))
		}
		// A new plan file's order rewrites the list; a decision appended later goes last.
		if err := p.Define([]plan.Definition{{ID: "b", Run: "make b"}, {ID: "c", Run: "make c"}, {ID: "a", Run: "make a"}, {ID: "d", Run: "make d"}}); err != nil {
			t.Fatal(err)
		}
		save(t, r, p)
		p = byName(t, r, "p")
		if _, err := p.Append(plan.Definition{ID: "e", Run: "make e"}); err != nil {
			t.Fatal(err)
		}
		save(t, r, p)
		if got := ids(byName(t, r, "p").Decisions()); got != "b c a d e " {
			t.Fatalf("decisions %s, want b c a d e", got)
		}
	})
	t.Run("current and list follow the latest save", func(t *testing.T) {
		r := newRepo(t)
		for _, n := range []string{"b", "c", "a"} {
			save(t, r, New(t, n, "x"))
		}
		if cur, err := r.Current(ctx); err != nil || cur.Name() != "a" {
			t.Fatalf("current: %v, %v; want the last saved, a", cur, err)
		}
		p := byName(t, r, "b")
		if _, err := p.Start("x", cp(1), "", at(1)); err != nil {
			t.Fatal(err)
		}
		save(t, r, p) // a change of one decision makes the plan current too
		if cur, err := r.Current(ctx); err != nil || cur.Name() != "b" {
			t.Fatalf("current: %v, %v; want b, saved last", cur, err)
		}
		l, err := r.List(ctx)
		if got := names(l); err != nil || !slices.Equal(got, []string{"b", "a", "c"}) {
			t.Fatalf("list: %v, %v; want b a c, most recently saved first", got, err)
		}
		if x, _ := l[0].Decision("x"); x.Status() != plan.Running {
			t.Fatalf("list gives b's x %s, want running", x.Status())
		}
	})
	t.Run("partial", func(t *testing.T) {
		r := newRepo(t)
		p := New(t, "s", "a", "b", "c")
		p.OpenTurn("go", cp(1), at(1))
		for i, id := range []string{"a", "b", "c"} {
			if _, err := p.Start(id, cp(i+2), "", at(2+i)); err != nil {
				t.Fatal(err)
			}
			if err := p.Finish(id, plan.Outcome{Status: plan.Succeeded}, at(2+i)); err != nil {
				t.Fatal(err)
			}
		}
		save(t, r, p)
		part, err := r.Partial(ctx, "s", []string{"c", "a", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		if !part.Partial() || ids(part.Decisions()) != "a c " || len(part.Turns()) != 1 || part.ID() != p.ID() {
			t.Fatalf("partial: partial %v, decisions %s, %d turns; want a and c in plan order and the turn", part.Partial(), ids(part.Decisions()), len(part.Turns()))
		}
		for _, id := range []string{"a", "c"} {
			gd, _ := part.Decision(id)
			wd, _ := p.Decision(id)
			if err := diffDecision(gd, wd); err != nil {
				t.Fatalf("partial decision %s: %v", id, err)
			}
		}
		if none, err := r.Partial(ctx, "s", nil); err != nil || len(none.Decisions()) != 0 || len(none.Turns()) != 1 {
			t.Fatalf("partial of no decisions: %v; want the turns alone", err)
		}
		// Saved back, a partial plan keeps the decisions it was not loaded with.
		if _, err := part.RecordOutside(plan.Definition{ID: "call_1", Run: "Bash: ls"}, cp(9), at(9)); err != nil {
			t.Fatal(err)
		}
		part.CloseTurn(cp(10), at(10))
		save(t, r, part)
		got := byName(t, r, "s")
		if ids(got.Decisions()) != "a b c call_1 " {
			t.Fatalf("after saving a partial plan: %s, want a b c and the new call last", ids(got.Decisions()))
		}
		if tu, _ := got.CurrentTurn(); tu.End != cp(10) {
			t.Fatalf("the partial plan's turn closed, stored as %+v", tu)
		}
		for _, id := range []string{"a", "b", "c"} {
			if d, _ := got.Decision(id); d.Status() != plan.Succeeded || len(d.Attempts()) != 1 {
				t.Fatalf("decision %s after a partial save: %s with %d attempts", id, d.Status(), len(d.Attempts()))
			}
		}
		// A partial plan cannot be rewritten whole.
		if err := part.Define([]plan.Definition{{ID: "a", Run: "make a"}}); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("define on a partial plan: %v, want a conflict", err)
		}
	})
	t.Run("partial saves of different decisions both stand", func(t *testing.T) {
		// An agent's parallel tool calls: each hook loads the session with its own call alone and
		// saves it; neither overwrites the other's.
		r := newRepo(t)
		p := New(t, "s", "a")
		save(t, r, p)
		one, err := r.Partial(ctx, "s", []string{"call_1"})
		if err != nil {
			t.Fatal(err)
		}
		two, err := r.Partial(ctx, "s", []string{"call_2"})
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range []*plan.Plan{one, two} {
			id := fmt.Sprintf("call_%d", i+1)
			if _, err := q.RecordOutside(plan.Definition{ID: id, Run: "Bash: " + id}, cp(i+1), at(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		save(t, r, one)
		save(t, r, two)
		got := byName(t, r, "s")
		if ids(got.Decisions()) != "a call_1 call_2 " {
			t.Fatalf("decisions %s, want a and both calls", ids(got.Decisions()))
		}
		for _, id := range []string{"call_1", "call_2"} {
			if d, _ := got.Decision(id); d.Status() != plan.Running {
				t.Fatalf("%s is %s, want running", id, d.Status())
			}
		}
	})
	t.Run("running executed", func(t *testing.T) {
		r := newRepo(t)
		for _, n := range []string{"z-run", "a-run", "outside", "idle", "done"} {
			p := New(t, n, "x")
			switch n {
			case "z-run", "a-run":
				if _, err := p.Start("x", cp(1), "", at(1)); err != nil {
					t.Fatal(err)
				}
			case "outside": // an agent's call running is not a decision plan runs
				if _, err := p.RecordOutside(plan.Definition{ID: "call_1", Run: "Bash: ls"}, cp(1), at(1)); err != nil {
					t.Fatal(err)
				}
			case "done": // ran before: its attempt finished
				if _, err := p.Start("x", cp(1), "", at(1)); err != nil {
					t.Fatal(err)
				}
				if err := p.Finish("x", plan.Outcome{Status: plan.Failed}, at(2)); err != nil {
					t.Fatal(err)
				}
			}
			save(t, r, p)
		}
		if got, err := r.RunningExecuted(ctx); err != nil || !slices.Equal(got, []string{"a-run", "z-run"}) {
			t.Fatalf("running executed: %v, %v; want a-run and z-run, by name", got, err)
		}
		p := byName(t, r, "a-run")
		if err := p.Finish("x", plan.Outcome{Status: plan.Succeeded}, at(3)); err != nil {
			t.Fatal(err)
		}
		save(t, r, p)
		if got, err := r.RunningExecuted(ctx); err != nil || !slices.Equal(got, []string{"z-run"}) {
			t.Fatalf("running executed after a-run finished: %v, %v", got, err)
		}
	})
}
