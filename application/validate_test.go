package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
)

func TestValidate(t *testing.T) {
	e := newUseCaseEnv(t)
	// Nothing configured, nothing pending: valid, nothing ran.
	v, err := e.ms.Validate(context.Background(), nil)
	if err != nil || !v.OK() || v.Ran || len(v.Problems()) != 0 {
		t.Fatalf("%+v, %v", v, err)
	}
	// A passing check.
	e.settings.check = "make test"
	v, err = e.ms.Validate(context.Background(), nil)
	if err != nil || !v.OK() || !v.Ran || *v.ExitCode != 0 || !strings.HasPrefix(v.Log, "logs/check-") || e.exec.calls[0].Script != "make test" {
		t.Fatalf("passing: %+v, %v", v, err)
	}
	// Failing, timed out, not startable.
	e.exec.results[""] = port.ExecResult{ExitCode: 2}
	v, _ = e.ms.Validate(context.Background(), nil)
	if v.OK() || !strings.Contains(strings.Join(v.Problems(), ";"), `the check "make test" failed with exit code 2`) {
		t.Errorf("failing: %v", v.Problems())
	}
	e.exec.results[""] = port.ExecResult{TimedOut: true}
	if v, _ = e.ms.Validate(context.Background(), nil); v.OK() || !strings.Contains(v.Problems()[0], "timed out") {
		t.Errorf("timed out: %v", v.Problems())
	}
	e.exec.results[""] = port.ExecResult{Interrupted: true}
	if _, err := e.ms.Validate(context.Background(), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v", err)
	}
	e.exec.results[""] = port.ExecResult{}
	e.exec.startErr[""] = errors.New("no shell")
	if v, _ = e.ms.Validate(context.Background(), nil); v.OK() || !strings.Contains(v.Problems()[0], "could not run: no shell") {
		t.Errorf("not startable: %v", v.Problems())
	}
	delete(e.exec.startErr, "")
	// Pending operation and conflicts: reported, the check does not run.
	calls := len(e.exec.calls)
	e.j.op = &port.Operation{ID: "op1", Kind: kindRollback}
	e.surgicalWith(t, corrA, "b", correction.Conflict{Path: "cfg.txt", Why: "w", Written: "cfg.txt"})
	v, err = e.ms.Validate(context.Background(), nil)
	if err != nil || v.OK() || v.Ran || len(e.exec.calls) != calls || len(v.Problems()) != 2 ||
		!strings.Contains(v.Problems()[0], "interrupted rollback (op1) is pending") || !strings.Contains(v.Problems()[1], "1 unresolved conflict(s): cfg.txt") {
		t.Errorf("pending and conflicts: %+v %v", v, v.Problems())
	}
	// Failures to read.
	e.j.pendingErr = errors.New("journal unreadable")
	if _, err := e.ms.Validate(context.Background(), nil); !errors.Is(err, e.j.pendingErr) {
		t.Errorf("journal: %v", err)
	}
	e.j.pendingErr = nil
	e.corrections.listErr = errors.New("db down")
	if _, err := e.ms.Validate(context.Background(), nil); !errors.Is(err, e.corrections.listErr) {
		t.Errorf("corrections: %v", err)
	}
	e.settings.checkErr = errors.New("bad config")
	if _, err := e.ms.Validate(context.Background(), nil); !errors.Is(err, e.settings.checkErr) {
		t.Errorf("settings: %v", err)
	}
	if _, err := e.ms.CheckCommand(); !errors.Is(err, e.settings.checkErr) {
		t.Errorf("CheckCommand: %v", err)
	}
}

func TestCreateWithValidation(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("a.txt", "a")
	cp, err := e.cps.Create(context.Background(), CreateRequest{Check: &CheckRequest{Command: "true"}})
	if err != nil || cp == nil {
		t.Fatalf("passing: %v", err)
	}
	n := len(e.repo.cps)
	e.exec.results[""] = port.ExecResult{ExitCode: 1}
	_, err = e.cps.Create(context.Background(), CreateRequest{Type: checkpoint.Manual, Check: &CheckRequest{Command: "false"}})
	var nv *NotValidError
	if !errors.As(err, &nv) || !strings.HasPrefix(err.Error(), "the workspace did not validate; no checkpoint was taken: the check \"false\" failed") || len(e.repo.cps) != n {
		t.Fatalf("failing: %v (%d checkpoints, %d before)", err, len(e.repo.cps), n)
	}
	e.exec.results[""] = port.ExecResult{Interrupted: true}
	if _, err := e.cps.Create(context.Background(), CreateRequest{Check: &CheckRequest{Command: "x"}}); !errors.Is(err, context.Canceled) || len(e.repo.cps) != n {
		t.Fatalf("interrupted: %v", err)
	}
	if e.l.held {
		t.Error("the lock was left held")
	}
}
