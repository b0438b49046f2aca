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
	"github.com/planhq/plan/domain/plan"
)

// A correction whose re-execution cannot even start (its plan is not the one named, or lacks the
// decision) is left reverted, as before the call: it can be re-executed once the request is right,
// rather than hanging in "reexecuting" until the next command marks it failed for good.
func TestApplyCorrectionRefusedLeavesTheCorrectionReverted(t *testing.T) {
	for _, c := range []struct {
		name string
		plan string
	}{
		{"an unknown plan", "typo"},
		{"a plan without the decision", "other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			ranABC(t, e)
			rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"})
			if err != nil {
				t.Fatal(err)
			}
			id := rev.Correction.ID()
			other, _ := plan.New("0123456789abcdef01234599", "other", "", true, e.clock.Now())
			e.plans.byName["other"] = other
			calls := len(e.exec.calls)

			_, _, err = e.cs.ApplyCorrection(context.Background(), id, CorrectRequest{Plan: c.plan})
			if !errors.Is(err, fault.ErrNotFound) {
				t.Fatalf("err = %v, want not found", err)
			}
			if len(e.exec.calls) != calls {
				t.Fatal("a decision ran")
			}
			got, _ := e.corrections.Get(context.Background(), id)
			if got.Status() != correction.Reverted {
				t.Fatalf("the refused correction is %s, want reverted", got.Status())
			}
			// The next command's recovery leaves it alone, and the right request re-executes it.
			if _, _, err := e.cs.ApplyCorrection(context.Background(), id, CorrectRequest{}); err != nil {
				t.Fatal(err)
			}
			if got, _ := e.corrections.Get(context.Background(), id); got.Status() != correction.Succeeded {
				t.Fatalf("after the right request the correction is %s", got.Status())
			}
		})
	}
}

// A failed re-execution whose plan cannot be saved afterwards reports both: the decision's
// failure and the database's.
func TestApplyCorrectionFailureAndSaveFailureAreBothReported(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	e.exec.results["b"] = port.ExecResult{ExitCode: 3}
	boom := errors.New("database is locked")
	// The attempt's start and finish are saved; the save after the failure is the one that fails.
	e.plans.saveErr, e.plans.failSaveAt = boom, e.plans.saves+3
	c, ran, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want b's failure and the save's error", err)
	}
	if c == nil || c.Status() != correction.Failed || len(ran) != 1 {
		t.Fatalf("correction %+v, re-executed %v", c, ran)
	}
}

// RevertDecisions checks that no surgical revert lies between the decision and now; when the
// corrections cannot be listed it refuses rather than roll back past one unseen.
func TestCorrectRefusesWhenSurgicalRevertsCannotBeChecked(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	boom := errors.New("database is locked")
	// The lock's recovery lists the corrections first; the check's own listing is the one that fails.
	listings := 0
	e.ops.corrections = correctionsFailingList{fakeCorrections: e.corrections, fail: func() error {
		if listings++; listings > 1 {
			return boom
		}
		return nil
	}}
	e.rewire()
	snaps := e.snap.snaps
	_, err := correctB(e, nil)
	if !errors.Is(err, boom) || listings != 2 {
		t.Fatalf("err = %v after %d listings", err, listings)
	}
	if e.snap.snaps != snaps || len(e.j.writes) != 0 || e.livePaths() != "a.txt b.txt c.txt" {
		t.Errorf("a refused correction changed something: %d snapshots, %d journal writes, workspace %q",
			e.snap.snaps-snaps, len(e.j.writes), e.livePaths())
	}
}

type correctionsFailingList struct {
	*fakeCorrections
	fail func() error
}

func (r correctionsFailingList) List(ctx context.Context) ([]*correction.Correction, error) {
	if err := r.fail(); err != nil {
		return nil, err
	}
	return r.fakeCorrections.List(ctx)
}

// A pre_decision checkpoint that cannot be read (not missing: the database fails) stops the
// correction before anything is taken.
func TestCorrectStopsWhenThePreDecisionCheckpointCannotBeRead(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	boom := errors.New("database is locked")
	e.repo.getErr = boom
	snaps := e.snap.snaps
	_, err := correctB(e, nil)
	if !errors.Is(err, boom) || fault.Kind(err) == fault.ErrConflict {
		t.Fatalf("err = %v, want the read error, not a deleted checkpoint", err)
	}
	if e.snap.snaps != snaps || len(e.j.writes) != 0 {
		t.Errorf("%d snapshots, %d journal writes", e.snap.snaps-snaps, len(e.j.writes))
	}
}

// A correction that is recorded but cannot be read back says so: the workspace is corrected.
func TestCorrectRecordedButNotReadBack(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	boom := errors.New("database is locked")
	e.ops.corrections = correctionsFailingGet{fakeCorrections: e.corrections, err: boom}
	e.rewire()
	res, err := correctB(e, func(r *CorrectRequest) { r.NoReexecute = true })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "is recorded") || res.Correction != nil {
		t.Fatalf("err = %v, correction %+v", err, res.Correction)
	}
	if len(e.corrections.cs) != 1 || e.livePaths() != "a.txt" {
		t.Errorf("the correction does not stand: %d corrections, workspace %q", len(e.corrections.cs), e.livePaths())
	}
}

// Recovery records a correction only from a journal that describes one: a detail without a reason
// fails the recovery as invalid, records no correction and publishes no archive.
func TestRecoveryRefusesAnInconsistentCorrectionDetail(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	e.g.Failpoint = func(name string) error {
		if name == kindCorrection+".applied" {
			return errors.New("killed")
		}
		return nil
	}
	if _, err := correctB(e, func(r *CorrectRequest) { r.NoReexecute = true }); err == nil {
		t.Fatal("the failpoint did not fire")
	}
	e.g.Failpoint = nil
	var op *port.Operation
	for i := range e.j.writes {
		if w := e.j.writes[i]; w.Kind == kindCorrection && w.Direction == port.Forward {
			op = &w
		}
	}
	if op == nil {
		t.Fatalf("no forward correction was journaled: %+v", e.j.writes)
	}
	var d correctionDetail
	if err := json.Unmarshal(op.Detail, &d); err != nil {
		t.Fatal(err)
	}
	d.Reason = ""
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	op.Detail = b
	e.j.op = op

	_, err = e.g.Recover(context.Background())
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "finish correction "+op.ID) {
		t.Fatalf("recovery: %v", err)
	}
	if len(e.corrections.cs) != 0 || e.archiver.published[op.ID] || e.j.op == nil {
		t.Errorf("%d corrections, published %v, journal %+v", len(e.corrections.cs), e.archiver.published[op.ID], e.j.op)
	}
}
