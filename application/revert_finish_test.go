package application

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// atStep runs arrange when the guard reaches step (a journaled operation's ".applied": the
// workspace has changed, the database has not been written yet), so a dependency fails exactly
// there and not before.
func atStep(e *useCaseEnv, step string, arrange func()) {
	e.g.Failpoint = func(name string) error {
		if name == step {
			arrange()
		}
		return nil
	}
}

// wantRevertUndone checks what a surgical revert of a that failed must leave: the workspace as it
// was, no correction, the journal cleared, and no archive left published.
func wantRevertUndone(t *testing.T, e *useCaseEnv, res RevertResult) {
	t.Helper()
	if res.Correction != nil || len(e.corrections.cs) != 0 {
		t.Error("a failed revert was recorded")
	}
	if got := e.liveContent(t, "f.txt"); got != "ONE\ntwo\nthree\nfour\nFIVE\n" || e.livePaths() != "b.txt f.txt" {
		t.Errorf("workspace after a failed revert: %s, f.txt %q", e.livePaths(), got)
	}
	if e.j.op != nil {
		t.Errorf("journal left pending: %+v", e.j.op)
	}
	if len(e.archiver.published) != 0 {
		t.Errorf("an archive stays published: %v", e.archiver.published)
	}
}

// Every step of a surgical revert's database side that fails puts the workspace back and leaves
// no correction and no published archive, whichever step it is; the error is the step's.
func TestRevertDecisionDatabaseFailuresPutTheWorkspaceBack(t *testing.T) {
	boom := errors.New("database is locked")
	cases := []struct {
		name    string
		plan    string // the request's --plan
		arrange func(e *useCaseEnv)
	}{
		{"reading the plan", "", func(e *useCaseEnv) { e.plans.currentErr = boom }},
		{"keeping the current plan current", "p", func(e *useCaseEnv) { e.plans.currentErr = boom }},
		{"recording the history", "", func(e *useCaseEnv) { e.history.recordErr = boom }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			ranEditsAB(t, e)
			atStep(e, kindRevert+".applied", func() { c.arrange(e) })
			res, err := e.cs.RevertDecision(context.Background(), revertReq("a", func(r *RevertRequest) { r.Plan = c.plan }))
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "revert a: record revert") {
				t.Fatalf("err = %v, want the database's error while recording the revert", err)
			}
			wantRevertUndone(t, e, res)
			if len(e.archiver.unpublishes) != 1 || len(e.archiver.discards) != 1 {
				t.Errorf("the archive was not unpublished and discarded: %q, %q", e.archiver.unpublishes, e.archiver.discards)
			}
			if _, ok := e.history.recs[e.archiver.unpublishes[0]]; ok {
				t.Error("the failed revert is in the history")
			}
		})
	}
}

// A revert planned from the scan is planned again from the safety checkpoint; when that record
// cannot be read back (its tree, or the content of a file to merge), the revert stops before the
// journal names it: nothing is changed or recorded.
func TestRevertDecisionStopsWhenTheSafetyCheckpointCannotBeRead(t *testing.T) {
	t.Run("its tree", func(t *testing.T) {
		e := newUseCaseEnv(t)
		ranEditsAB(t, e)
		lost := fault.Integrity("tree is missing")
		e.snap.onSnapshot = func() { e.store.err = lost }
		res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
		e.store.err = nil
		if !errors.Is(err, lost) {
			t.Fatalf("err = %v", err)
		}
		if len(e.j.writes) != 0 {
			t.Errorf("the journal was written: %+v", e.j.writes)
		}
		wantRevertUndone(t, e, res)
	})
	t.Run("the content to merge", func(t *testing.T) {
		e := newUseCaseEnv(t)
		ranEditsAB(t, e)
		live := tree.Sum([]byte("ONE\ntwo\nthree\nfour\nFIVE\n"))
		var kept []byte
		e.snap.onSnapshot = func() {
			kept = e.store.blobs[live]
			delete(e.store.blobs, live)
		}
		res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
		e.store.blobs[live] = kept
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), `read "f.txt"`) {
			t.Fatalf("err = %v, want the unreadable f.txt named", err)
		}
		if len(e.j.writes) != 0 {
			t.Errorf("the journal was written: %+v", e.j.writes)
		}
		wantRevertUndone(t, e, res)
	})
}

// interruptedRevert runs a surgical revert of a that "dies" once the workspace has changed and
// returns the forward operation the journal held, with its detail changed by spoil.
func interruptedRevert(t *testing.T, e *useCaseEnv, spoil func(*revertDetail)) port.Operation {
	t.Helper()
	ranEditsAB(t, e)
	e.g.Failpoint = func(name string) error {
		if name == kindRevert+".applied" {
			return errors.New("killed")
		}
		return nil
	}
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); err == nil {
		t.Fatal("the failpoint did not fire")
	}
	e.g.Failpoint = nil
	var op *port.Operation
	for i := range e.j.writes {
		if w := e.j.writes[i]; w.Kind == kindRevert && w.Direction == port.Forward {
			op = &w
		}
	}
	if op == nil {
		t.Fatalf("no forward revert was journaled: %+v", e.j.writes)
	}
	var d revertDetail
	if err := json.Unmarshal(op.Detail, &d); err != nil {
		t.Fatal(err)
	}
	spoil(&d)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	op.Detail = b
	return *op
}

// Recovery records a surgical revert only from a journal that describes one: a detail naming a
// decision the plan does not have, or without a reason, fails the recovery with the domain's
// refusal, records no correction and publishes no archive; the journal stays for `plan recover`.
func TestRecoveryRefusesAnInconsistentRevertDetail(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(*revertDetail)
		kind  error
	}{
		{"a decision the plan does not have", func(d *revertDetail) { d.DecisionID = "zzz" }, fault.ErrNotFound},
		{"no reason", func(d *revertDetail) { d.Reason = "" }, fault.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			op := interruptedRevert(t, e, c.spoil)
			e.j.op = &op
			_, err := e.g.Recover(context.Background())
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "finish revert "+op.ID) {
				t.Fatalf("recovery: %v, want %v", err, c.kind)
			}
			if _, err := e.corrections.Get(context.Background(), op.ID); !errors.Is(err, fault.ErrNotFound) {
				t.Errorf("a correction was recorded: %v", err)
			}
			if e.archiver.published[op.ID] {
				t.Error("the archive of an unrecorded revert is published")
			}
			if e.j.op == nil {
				t.Error("the journal of an unfinished revert was cleared")
			}
		})
	}
}

// correctionsFailingGet is the correction repository whose reads fail: the revert or correction
// is recorded, but cannot be read back.
type correctionsFailingGet struct {
	*fakeCorrections
	err error
}

func (r correctionsFailingGet) Get(context.Context, string) (*correction.Correction, error) {
	return nil, r.err
}

// A revert that is recorded but cannot be read back is an error that says the revert stands: it
// is not reported as a revert that did not happen (nor as a success without its correction).
func TestRevertDecisionRecordedButNotReadBack(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	boom := errors.New("database is locked")
	e.ops.corrections = correctionsFailingGet{fakeCorrections: e.corrections, err: boom}
	e.rewire()
	res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "is recorded") {
		t.Fatalf("err = %v, want the read error, saying the revert is recorded", err)
	}
	if res.Correction != nil {
		t.Errorf("a correction came back with the error: %+v", res.Correction)
	}
	if len(e.corrections.cs) != 1 || e.liveContent(t, "f.txt") != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Errorf("the revert does not stand: %d corrections, f.txt %q", len(e.corrections.cs), e.liveContent(t, "f.txt"))
	}
}

// A plan repository that fails is the revert's error, before anything is taken or touched.
func TestRevertDecisionPlanLookupFails(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	boom := errors.New("database is locked")
	snaps := e.snap.snaps
	e.plans.byNameErr = boom
	_, err := e.cs.RevertDecision(context.Background(), revertReq("a", func(r *RevertRequest) { r.Plan = "p" }))
	if !errors.Is(err, boom) || fault.Kind(err) == fault.ErrNotFound {
		t.Fatalf("err = %v, want the repository's error, not a missing plan", err)
	}
	if e.snap.snaps != snaps || len(e.j.writes) != 0 || e.l.held {
		t.Errorf("the failed lookup took %d snapshots, wrote %d journals, lock held %v", e.snap.snaps-snaps, len(e.j.writes), e.l.held)
	}
}
