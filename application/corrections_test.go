package application

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// ranABC runs decisions a, b and c, each writing <id>.txt, and returns the plan.
func ranABC(t *testing.T, e *useCaseEnv) *plan.Plan {
	t.Helper()
	e.writes()
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt c.txt" {
		t.Fatalf("workspace after the run: %q", got)
	}
	return res.Plan
}

func correctB(e *useCaseEnv, mod func(*CorrectRequest)) (CorrectResult, error) {
	req := CorrectRequest{DecisionID: "b", Reason: "b was wrong", Warn: e.warn}
	if mod != nil {
		mod(&req)
	}
	return e.cs.Correct(context.Background(), req)
}

func TestRevertDecisionsRefusesBadInput(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	locks := e.l.locks
	for _, req := range []CorrectRequest{
		{DecisionID: "b", Reason: ""},
		{DecisionID: "b", Reason: " \n\t"},
		{DecisionID: "b", Reason: strings.Repeat("x", correction.MaxReason+1)},
		{DecisionID: "B.c", Reason: "r"},
		{DecisionID: "../b", Reason: "r"},
		{DecisionID: "", Reason: "r"},
	} {
		if _, err := e.cs.RevertDecisions(context.Background(), req); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q / %.20q: err = %v, want invalid input", req.DecisionID, req.Reason, err)
		}
	}
	if e.l.locks != locks {
		t.Error("invalid input took the workspace lock")
	}
}

func TestRevertDecisionsLookupErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	if _, err := correctB(e, nil); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no plan has run in this workspace") {
		t.Errorf("no plan: %v", err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.cs.RevertDecisions(underLock(), CorrectRequest{DecisionID: "b", Reason: "r"}); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.currentErr = nil

	p := ranABC(t, e)
	if _, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "zzz", Reason: "r"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown decision: %v", err)
	}
	b, _ := p.Decision("b")
	delete(e.repo.cps, latestOf(b).CheckpointID)
	if _, err := correctB(e, nil); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "was deleted") {
		t.Errorf("pre_decision checkpoint deleted: %v", err)
	}
	e.l.err = fault.Conflict("busy")
	if _, err := correctB(e, nil); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if _, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if len(e.archiver.staged) != 0 || len(e.corrections.cs) != 0 {
		t.Error("a refused correction archived or recorded something")
	}
}

func TestCorrectDryRun(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	cps, writes := len(e.repo.cps), len(e.j.writes)
	res, err := correctB(e, func(r *CorrectRequest) { r.DryRun = true })
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || res.Correction != nil || len(res.Scope) != 2 || res.Scope[0].DecisionID != "b" || res.Scope[1].DecisionID != "c" {
		t.Fatalf("dry run: %+v", res)
	}
	if res.Rollback.Counts != (port.ChangeCounts{Deleted: 2}) || !res.Rollback.DryRun {
		t.Errorf("rollback preview %+v", res.Rollback)
	}
	if len(e.repo.cps) != cps || len(e.j.writes) != writes || len(e.archiver.staged) != 0 || len(e.corrections.cs) != 0 {
		t.Error("a dry run changed something")
	}
	if got := e.livePaths(); got != "a.txt b.txt c.txt" {
		t.Errorf("workspace after a dry run: %q", got)
	}
}

func TestCorrectWithoutReexecution(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	bBefore, _ := p.Decision("b")
	pre := latestOf(bBefore).CheckpointID
	res, err := correctB(e, func(r *CorrectRequest) { r.NoReexecute = true })
	if err != nil {
		t.Fatal(err)
	}
	c := res.Correction
	if c == nil || c.Status() != correction.Reverted || !slices.Equal(c.RevertedDecisions(), []string{"b", "c"}) || len(res.Reexecuted) != 0 {
		t.Fatalf("correction %+v", res)
	}
	prm := c.Params()
	if prm.RollbackCheckpointID != string(pre) || prm.ArchiveDir != "/archive/"+c.ID() || prm.Reason != "b was wrong" {
		t.Errorf("params %+v", prm)
	}
	safety, err := e.repo.Get(context.Background(), checkpoint.ID(prm.SafetyCheckpointID))
	if err != nil || safety.Type() != checkpoint.PreCorrection || !strings.Contains(safety.Note(), "b was wrong") {
		t.Errorf("safety checkpoint %v %v", safety, err)
	}
	if got := e.livePaths(); got != "a.txt" {
		t.Errorf("workspace after the revert: %q, want a.txt only", got)
	}
	items := e.archiver.staged[c.ID()]
	if len(items) != 2 || items[0].DecisionID != "b" || items[0].ResultTree.IsZero() || len(items[0].Artifacts) != 1 || !e.archiver.published[c.ID()] {
		t.Errorf("archive: %+v, published %v", items, e.archiver.published[c.ID()])
	}
	p = e.stored(t, p.Name())
	for _, id := range []string{"b", "c"} {
		d, _ := p.Decision(id)
		if d.Status() != plan.Reverted || latestOf(d).RevertedBy != c.ID() {
			t.Errorf("%s: %s by %q", id, d.Status(), latestOf(d).RevertedBy)
		}
	}
	if e.j.op != nil {
		t.Error("the journal is still pending")
	}
	rec, err := e.history.Get(context.Background(), c.ID())
	if err != nil || rec.Kind != "correction" || rec.TargetCheckpoint != pre || !slices.Equal(rec.Reverted, []string{"b", "c"}) {
		t.Errorf("history %+v %v", rec, err)
	}

	// Reverted decisions cannot be corrected again before they run again.
	if _, err := correctB(e, nil); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("correcting a reverted decision: %v", err)
	}
	// The finisher is idempotent: recovery may run it again.
	op := port.Operation{ID: c.ID(), Kind: kindCorrection, Detail: mustJSON(t, correctionDetail{DecisionID: "b", Reason: "b was wrong", Scope: prm.Scope})}
	if err := e.ops.finishCorrection(context.Background(), op); err != nil || len(e.corrections.cs) != 1 {
		t.Errorf("finishing again: %v, %d corrections", err, len(e.corrections.cs))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCorrectReexecutes(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	var events []string
	res, err := correctB(e, func(r *CorrectRequest) {
		r.Run = "fixed b"
		r.Events = func(ev Event) { events = append(events, ev.Kind+" "+ev.DecisionID) }
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Correction
	if c.Status() != correction.Succeeded || !slices.Equal(res.Reexecuted, []string{"b", "c"}) || !slices.Equal(c.Reexecuted(), []string{"b", "c"}) || c.FinishedAt().IsZero() {
		t.Fatalf("correction %+v / %s", res, c.Status())
	}
	b, _ := e.stored(t, p.Name()).Decision("b")
	if b.Status() != plan.Succeeded || len(b.Attempts()) != 2 || latestOf(b).Command != "fixed b" || b.Definition().Run != "fixed b" {
		t.Errorf("b: %s, %d attempts, command %q", b.Status(), len(b.Attempts()), latestOf(b).Command)
	}
	if string(e.store.blobs[tree.Sum([]byte("fixed b"))]) != "fixed b" || e.livePaths() != "a.txt b.txt c.txt" {
		t.Errorf("workspace after the correction: %q", e.livePaths())
	}
	if want := []string{"start b", "finish b", "start c", "finish c"}; !slices.Equal(events, want) {
		t.Errorf("events %q", events)
	}
	if c.Params().Command != "fixed b" {
		t.Errorf("the correction does not keep its command: %+v", c.Params())
	}
}

func TestCorrectReexecutionFails(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	e.exec.results["b"] = port.ExecResult{ExitCode: 4}
	res, err := correctB(e, nil)
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" || !strings.Contains(err.Error(), "is recorded, but re-execution stopped") {
		t.Fatalf("err = %v", err)
	}
	if res.Correction == nil || res.Correction.Status() != correction.Failed || !slices.Equal(res.Reexecuted, []string{"b"}) {
		t.Errorf("correction %+v", res)
	}
	c, _ := e.stored(t, p.Name()).Decision("c")
	if c.Status() != plan.Reverted {
		t.Errorf("c is %s: a failed re-execution must not run it", c.Status())
	}

	// A re-execution that times out is reported as a timeout, not as "failed with exit code -1"
	// (the correction path used to drop TimedOut).
	e = newUseCaseEnv(t)
	ranABC(t, e)
	e.exec.results["b"] = port.ExecResult{ExitCode: -1, TimedOut: true}
	_, err = correctB(e, nil)
	if !errors.As(err, &df) || !df.TimedOut || !strings.Contains(err.Error(), `decision "b" timed out`) {
		t.Fatalf("timed-out re-execution: %v", err)
	}

	// Interrupted while re-executing.
	e = newUseCaseEnv(t)
	ranABC(t, e)
	e.exec.results["c"] = port.ExecResult{Interrupted: true}
	res, err = correctB(e, nil)
	if !errors.Is(err, context.Canceled) || !errors.As(err, &df) || df.DecisionID != "c" || res.Correction.Status() != correction.Failed {
		t.Errorf("interrupted: %v, %+v", err, res)
	}

	// The re-execution cannot even take its checkpoint.
	e = newUseCaseEnv(t)
	ranABC(t, e)
	rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	e.snap.err = errors.New("disk full")
	c2, reexecuted, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{})
	if !errors.Is(err, e.snap.err) || len(reexecuted) != 0 || c2.Status() != correction.Failed {
		t.Errorf("checkpoint failing: %v, %q, %s", err, reexecuted, c2.Status())
	}
}

func TestApplyCorrectionErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	if _, _, err := e.cs.ApplyCorrection(context.Background(), "0123456789abcdef01234567", CorrectRequest{}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown correction: %v", err)
	}
	res, err := correctB(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Correction.ID()
	if _, _, err := e.cs.ApplyCorrection(context.Background(), id, CorrectRequest{}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("re-applying a finished correction: %v", err)
	}

	e = newUseCaseEnv(t)
	ranABC(t, e)
	rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r", Run: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	id = rev.Correction.ID()
	e.plans.currentErr = errors.New("db down")
	// Under the caller's lock (no recovery, whose repairs would read the plan first).
	if c, _, err := e.cs.ApplyCorrection(underLock(), id, CorrectRequest{}); !errors.Is(err, e.plans.currentErr) || c == nil {
		t.Errorf("plans failing: %v", err)
	}
	if _, _, err := e.cs.ApplyCorrection(context.Background(), id, CorrectRequest{}); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("plans failing during recovery: %v", err)
	}

	// Another plan became current: the re-execution still runs the corrected decision's plan.
	e = newUseCaseEnv(t)
	ranABC(t, e)
	rev, err = e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r", Run: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := plan.New("p9", "other", "", true, e.clock.Now())
	if err := e.plans.Save(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	// Named, a plan without the corrected decision cannot re-execute it.
	if _, _, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{Plan: "other"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("decision not in the named plan: %v", err)
	}
	if _, ran, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{}); err != nil || !slices.Equal(ran, []string{"b", "c"}) {
		t.Errorf("another plan current: re-executed %v, %v", ran, err)
	}

	e.l.err = fault.Conflict("busy")
	if _, _, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
}

func TestRevertDecisionsFailuresLeaveNothingBehind(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		arrange func(e *useCaseEnv)
		msg     string
		discard bool // the staged archive must be discarded
		// fakeTx runs the finisher's transaction without rolling it back on failure, so what the
		// finisher wrote before the failing step stays in the fakes; a real database undoes it.
		txWritten bool
	}{
		{"safety checkpoint", func(e *useCaseEnv) { e.snap.err = boom }, "record the workspace before correcting", false, false},
		{"staging the archive", func(e *useCaseEnv) { e.archiver.stageErr = boom }, "archive the reverted decisions' artifacts", true, false},
		{"restoring the workspace", func(e *useCaseEnv) { e.r.applyErr = boom }, "correct b: roll back to", true, false},
		{"publishing the archive", func(e *useCaseEnv) { e.archiver.publishErr = boom }, "publish archive", true, false},
		{"counting the rollback", func(e *useCaseEnv) { e.repo.updateErr = boom }, "correct b:", true, false},
		{"recording the correction", func(e *useCaseEnv) { e.corrections.addErr = boom }, "correct b:", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			ranABC(t, e)
			c.arrange(e)
			res, err := correctB(e, nil)
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %q", err, c.msg)
			}
			if res.Correction != nil || len(e.corrections.cs) != 0 {
				t.Error("a failed correction was recorded")
			}
			if got := e.livePaths(); got != "a.txt b.txt c.txt" {
				t.Errorf("workspace after a failed correction: %q", got)
			}
			if e.j.op != nil {
				t.Errorf("journal left pending: %+v", e.j.op)
			}
			if discarded := len(e.archiver.discards) == 1; discarded != c.discard {
				t.Errorf("archive discarded = %v, want %v (discards %q)", discarded, c.discard, e.archiver.discards)
			}
			if len(e.archiver.published) != 0 {
				t.Errorf("an archive stays published: %v", e.archiver.published)
			}
			if c.txWritten {
				if len(e.archiver.unpublishes) != 1 {
					t.Errorf("the archive of an unrecorded correction was not unpublished: %q", e.archiver.unpublishes)
				}
				return
			}
			for _, id := range []string{"b", "c"} {
				p, _ := e.plans.Current(context.Background())
				d, _ := p.Decision(id)
				if d.Status() != plan.Succeeded {
					t.Errorf("%s is %s after a failed correction", id, d.Status())
				}
			}
		})
	}
}

// When the workspace cannot be put back, the journal stays for recovery, and so does the staged
// archive, which recovery publishes when it finishes the correction.
func TestRevertDecisionsIncompleteUndoKeepsArchive(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	e.r.applyErr = &port.IncompleteUndoError{Cause: errors.New("disk full"), Undo: errors.New("still full")}
	_, err := correctB(e, nil)
	if err == nil || !strings.Contains(err.Error(), "plan recover") {
		t.Fatalf("err = %v", err)
	}
	if e.j.op == nil || e.j.op.Direction != port.Backward || e.j.op.Kind != kindCorrection {
		t.Fatalf("journal %+v, want a backward correction", e.j.op)
	}
	if len(e.archiver.discards) != 0 || len(e.archiver.staged) != 1 {
		t.Errorf("staged %d, discarded %q", len(e.archiver.staged), e.archiver.discards)
	}
}

func TestArchiveItems(t *testing.T) {
	h := tree.Sum([]byte("result"))
	arts := []artifact.Artifact{{Path: "x", Change: tree.Added, Size: 1}}
	var warned []string
	warn := func(m string) { warned = append(warned, m) }
	items, err := archiveItems([]correction.Item{
		{DecisionID: "a", Attempt: 2, ResultTree: h, Artifacts: arts},
		{DecisionID: "b", Attempt: 1, Artifacts: arts}, // no result tree: nothing to archive from
		{DecisionID: "c", Attempt: 1},                  // no result tree and nothing changed: no warning
	}, warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].ResultTree != h || len(items[0].Artifacts) != 1 || !items[1].ResultTree.IsZero() || len(items[1].Artifacts) != 0 {
		t.Errorf("items %+v", items)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `decision "b" attempt 1 has no recorded result tree`) {
		t.Errorf("warnings %q", warned)
	}
	if _, err := archiveItems([]correction.Item{{DecisionID: "b", ResultTree: h}}, nil); err != nil {
		t.Errorf("nil warn: %v", err)
	}
	if _, err := archiveItems([]correction.Item{{DecisionID: "b", Attempt: 1, Artifacts: arts}}, nil); err != nil {
		t.Errorf("nil warn, no result tree: %v", err)
	}
}

func TestFinishRejectsDamagedDetail(t *testing.T) {
	e := newUseCaseEnv(t)
	err := e.ops.finishCorrection(context.Background(), port.Operation{ID: "0123456789abcdef01234567", Kind: kindCorrection, Detail: []byte("{not json")})
	if !errors.Is(err, fault.ErrIntegrity) || len(e.archiver.published) != 0 {
		t.Errorf("damaged detail: %v", err)
	}
}

func TestShowAndListCorrections(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	first, err := correctB(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "c", Reason: "c too", NoReexecute: true})
	if err != nil {
		t.Fatal(err)
	}
	list, err := e.cs.List(context.Background())
	if err != nil || len(list) != 2 || list[0].ID() != second.Correction.ID() {
		t.Fatalf("list: %v %v", list, err)
	}
	got, err := e.cs.Show(context.Background(), first.Correction.ID()[:20])
	if err != nil || got.ID() != first.Correction.ID() {
		t.Errorf("show by prefix: %v %v", got, err)
	}
	for _, ref := range []string{"", "abc", "ZZZZ", "../etc", strings.Repeat("a", 25)} {
		if _, err := e.cs.Show(context.Background(), ref); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("show %q: %v, want invalid input", ref, err)
		}
	}
	if _, err := e.cs.Show(context.Background(), "ffffffff"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("show unknown: %v", err)
	}
}

func TestCloseStaleCorrections(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	startReexecution(t, e, rev.Correction.ID()) // as a killed `plan correct` left it
	if _, err := e.g.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.corrections.Get(context.Background(), rev.Correction.ID()); c.Status() != correction.Failed || c.FinishedAt().IsZero() {
		t.Errorf("stale correction is %s", c.Status())
	}

	boom := errors.New("db down")
	e.corrections.listErr = boom
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, boom) {
		t.Errorf("list failing: %v", err)
	}
	e.corrections.listErr = nil
	rev2 := newTestCorrection(t, "b", "s", "r")
	if err := rev2.StartReexecution(); err != nil {
		t.Fatal(err)
	}
	if err := e.corrections.Add(context.Background(), rev2); err != nil {
		t.Fatal(err)
	}
	e.corrections.updateErr = boom
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, boom) {
		t.Errorf("update failing: %v", err)
	}
	e.corrections.updateErr = nil
	e.archiver.cleanErr = boom
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, boom) {
		t.Errorf("archive clean-up failing: %v", err)
	}
}

// startReexecution moves the stored correction id to reexecuting, as a `plan correct` killed while
// re-executing left it.
func startReexecution(t *testing.T, e *useCaseEnv, id string) {
	t.Helper()
	if err := e.corrections.Update(context.Background(), id, (*correction.Correction).StartReexecution); err != nil {
		t.Fatal(err)
	}
}
