package application

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// editedAfterABC runs a, b and c and then changes a.txt and b.txt by hand; it returns c's
// pre_decision checkpoint, which holds a.txt and b.txt as the decisions wrote them.
func editedAfterABC(t *testing.T, e *useCaseEnv) *checkpoint.Checkpoint {
	t.Helper()
	p := ranABC(t, e)
	c, _ := p.Decision("c")
	cp, err := e.repo.Get(context.Background(), latestOf(c).CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("a.txt", "my a")
	e.setFile("b.txt", "my b")
	return cp
}

func TestRollbackPathsRestoresOnlyThosePaths(t *testing.T) {
	e := newUseCaseEnv(t)
	w := withTrees(e)
	target := editedAfterABC(t, e)
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if e.liveContent(t, "a.txt") != "make a" || e.liveContent(t, "b.txt") != "my b" || e.livePaths() != "a.txt b.txt c.txt" {
		t.Errorf("workspace: %s, a.txt %q, b.txt %q", e.livePaths(), e.liveContent(t, "a.txt"), e.liveContent(t, "b.txt"))
	}
	if res.Mode != RestoreFiles || res.Counts != (port.ChangeCounts{Modified: 1}) || w.calls != 1 {
		t.Errorf("result mode %s counts %+v, trees stored %d", res.Mode, res.Counts, w.calls)
	}
	// The safety checkpoint holds both hand edits, so nothing the restore replaced is lost.
	backup, err := e.store.Flatten(res.Backup.Root())
	if err != nil || res.Backup.Type() != checkpoint.PreRollback || !strings.Contains(res.Backup.Note(), "before restoring a.txt from") {
		t.Fatalf("backup %+v, %v", res.Backup, err)
	}
	for _, x := range backup {
		if x.Path == "a.txt" && string(e.store.blobs[x.Hash]) != "my a" {
			t.Errorf("the backup lost the edit of a.txt")
		}
	}
	// Decision states describe the whole workspace: a per-path restore leaves them alone.
	for _, id := range []string{"a", "b", "c"} {
		if st := decisionStatus(t, e, id); st != plan.Succeeded {
			t.Errorf("%s is %s after a per-path restore", id, st)
		}
	}
	if len(res.RevertedDecisions) != 0 || e.j.op != nil || e.l.held {
		t.Errorf("reverted %v, journal %+v, lock held %v", res.RevertedDecisions, e.j.op, e.l.held)
	}
	rec, err := e.history.Get(context.Background(), res.OperationID)
	if err != nil || rec.Kind != kindRollback || rec.BackupCheckpoint != res.Backup.ID() || rec.Modified != 1 {
		t.Errorf("history %+v, %v", rec, err)
	}
	// Recovery keeps the mode: a per-path restore's journal says files.
	if len(e.j.writes) == 0 || rollbackMode(e.j.writes[len(e.j.writes)-1]) != RestoreFiles {
		t.Errorf("journaled %+v", e.j.writes)
	}
}

func TestRollbackPathsDryRunChangesNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	target := editedAfterABC(t, e)
	cps, locks := len(e.repo.cps), e.l.locks
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"b.txt", "c.txt"}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	// b.txt goes back to b's content; c.txt, which the checkpoint does not hold, goes.
	if !res.DryRun || res.Mode != RestoreFiles || res.Counts != (port.ChangeCounts{Modified: 1, Deleted: 1}) {
		t.Errorf("preview %+v", res)
	}
	if e.liveContent(t, "b.txt") != "my b" || len(e.repo.cps) != cps || e.l.locks != locks || len(e.j.writes) != 0 {
		t.Error("a dry per-path restore changed something")
	}
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"nope.txt"}, DryRun: true}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("dry, a path in neither tree: %v", err)
	}
	e.snap.err = errors.New("disk gone")
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"b.txt"}, DryRun: true}); !errors.Is(err, e.snap.err) {
		t.Errorf("dry, scan failing: %v", err)
	}
}

func TestRollbackPathsRefusesBadPathsBeforeLocking(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	target := editedAfterABC(t, e)
	locks := e.l.locks
	for _, c := range []struct {
		req  RollbackRequest
		want string
	}{
		{RollbackRequest{Paths: []string{"../x"}}, "stay inside it"},
		{RollbackRequest{Paths: []string{"/etc/passwd"}}, "stay inside it"},
		{RollbackRequest{Paths: []string{"a.txt", "./a.txt"}}, "stay inside it"},
		{RollbackRequest{Paths: []string{".plan/plan.db"}}, "plan does not restore .plan/"},
		{RollbackRequest{Paths: []string{".git"}}, "plan does not restore .git/"},
		{RollbackRequest{Paths: []string{"a.txt"}, Mode: RestoreState}, "takes no paths"},
	} {
		c.req.Ref = string(target.ID())
		if _, err := e.cps.Rollback(context.Background(), c.req); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v (%s): err = %v, want invalid input saying %q", c.req.Paths, c.req.Mode, err, c.want)
		}
	}
	if e.l.locks != locks || len(e.j.writes) != 0 {
		t.Error("a refused per-path restore took the lock or journaled")
	}
}

// A restore that cannot start (a path in neither tree) deletes the safety checkpoint it took: it
// would record nothing a restore touched.
func TestRollbackPathsThatCannotStartLeaveNoCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	w := withTrees(e)
	target := editedAfterABC(t, e)
	cps := len(e.repo.cps)
	_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"nope.txt"}})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "neither in the checkpoint nor in the workspace") {
		t.Errorf("err = %v", err)
	}
	if len(e.repo.cps) != cps || w.calls != 0 || len(e.j.writes) != 0 || e.l.held {
		t.Errorf("checkpoints %d → %d, trees stored %d, journal writes %d", cps, len(e.repo.cps), w.calls, len(e.j.writes))
	}
}

func TestRollbackPathsFailures(t *testing.T) {
	boom := errors.New("boom")
	t.Run("safety checkpoint", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		target := editedAfterABC(t, e)
		e.snap.err = boom
		_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"a.txt"}})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "record the current state before restoring") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("storing the tree", func(t *testing.T) {
		e := newUseCaseEnv(t)
		w := withTrees(e)
		target := editedAfterABC(t, e)
		w.err = boom
		res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"a.txt"}})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "store the restored tree") {
			t.Errorf("err = %v", err)
		}
		// The safety checkpoint stays, and is reported: nothing was touched, but it is what was there.
		if res.Backup == nil || e.liveContent(t, "a.txt") != "my a" || len(e.j.writes) != 0 {
			t.Errorf("backup %v, a.txt %q, journal writes %d", res.Backup, e.liveContent(t, "a.txt"), len(e.j.writes))
		}
	})
	t.Run("deleting the unused safety checkpoint", func(t *testing.T) {
		e := newUseCaseEnv(t)
		withTrees(e)
		target := editedAfterABC(t, e)
		e.repo.deleteErr = boom
		res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"nope.txt"}})
		if !errors.Is(err, boom) || !errors.Is(err, fault.ErrNotFound) || res.Backup == nil {
			t.Errorf("err = %v, backup %v: want both causes and the checkpoint left behind named", err, res.Backup)
		}
	})
}

// Without a TreeWriter (it is optional in OperationsParams) a per-path restore is refused, before
// anything is recorded, rather than crashing.
func TestRollbackPathsWithoutTreeWriterRefuses(t *testing.T) {
	e := newUseCaseEnv(t)
	target := editedAfterABC(t, e)
	cps := len(e.repo.cps)
	_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Paths: []string{"a.txt"}})
	if err == nil || !strings.Contains(err.Error(), "not wired") {
		t.Errorf("err = %v", err)
	}
	if len(e.repo.cps) != cps || e.liveContent(t, "a.txt") != "my a" || e.l.held {
		t.Error("a refused per-path restore left something behind")
	}
}

func TestRollbackValidate(t *testing.T) {
	e := newUseCaseEnv(t)
	target := editedAfterABC(t, e)
	e.exec.run = nil // the validation changes nothing
	var live bytes.Buffer
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Validate: "make test", Live: &live})
	if err != nil {
		t.Fatal(err)
	}
	last := e.exec.calls[len(e.exec.calls)-1]
	if last.Script != "make test" || !strings.HasPrefix(last.LogPath, "logs/validate-") || !strings.HasPrefix(last.Token, "validate-") {
		t.Errorf("validation ran as %+v", last)
	}
	if live.Len() == 0 {
		t.Error("the validation's output did not reach Live")
	}
	if res.Backup == nil {
		t.Fatal("no backup")
	}

	// A failing validation leaves the workspace restored and names the checkpoint that undoes it.
	e = newUseCaseEnv(t)
	target = editedAfterABC(t, e)
	e.exec.run = nil
	e.exec.results[""] = port.ExecResult{ExitCode: 1}
	res, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Validate: "make test"})
	var vf *ValidationFailedError
	if !errors.As(err, &vf) || vf.ExitCode == nil || *vf.ExitCode != 1 || vf.Undo != res.Backup.ID() || vf.Command != "make test" {
		t.Fatalf("err = %v", err)
	}
	if e.livePaths() != "a.txt b.txt" || e.liveContent(t, "a.txt") != "make a" {
		t.Errorf("workspace after a failed validation: %s", e.livePaths())
	}

	// A validation cut short is a cancellation, not a validation failure.
	e.exec.results[""] = port.ExecResult{Interrupted: true}
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(res.Backup.ID()), Validate: "make test"})
	if !errors.Is(err, context.Canceled) || errors.As(err, &vf) {
		t.Errorf("interrupted validation: %v", err)
	}
	// One that timed out failed.
	e.exec.results[""] = port.ExecResult{TimedOut: true}
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Validate: "make test"})
	if !errors.As(err, &vf) {
		t.Errorf("timed-out validation: %v", err)
	}
	// One that could not start says why.
	e.exec.startErr[""] = errors.New("no shell")
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), Validate: "make test"})
	if !errors.As(err, &vf) || !errors.Is(err, e.exec.startErr[""]) {
		t.Errorf("validation that cannot start: %v", err)
	}
}

func TestRollbackStateOnly(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	ref := string(latestOf(b).CheckpointID)
	cps := len(e.repo.cps)

	dry, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: ref, Mode: RestoreState, DryRun: true})
	if err != nil || !dry.DryRun || dry.Mode != RestoreState || !slices.Equal(dry.RevertedDecisions, []string{"b", "c"}) {
		t.Errorf("dry: %+v, %v", dry, err)
	}
	if decisionStatus(t, e, "b") != plan.Succeeded {
		t.Error("a dry state rollback reverted b")
	}

	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: ref, Mode: RestoreState})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.RevertedDecisions, []string{"b", "c"}) || res.Backup != nil {
		t.Errorf("result %+v", res)
	}
	if e.livePaths() != "a.txt b.txt c.txt" || len(e.repo.cps) != cps || len(e.j.writes) != 0 {
		t.Error("a state rollback touched the workspace")
	}
	for _, id := range []string{"b", "c"} {
		if st := decisionStatus(t, e, id); st != plan.Reverted {
			t.Errorf("%s is %s", id, st)
		}
	}
	recs, _ := e.history.List(context.Background())
	if len(recs) != 1 || recs[0].Kind != kindRollback || !slices.Equal(recs[0].Reverted, []string{"b", "c"}) {
		t.Errorf("history %+v", recs)
	}
}

func TestRollbackStateOnlyWithoutPlan(t *testing.T) {
	e := newUseCaseEnv(t)
	cp := e.checkpointAt(t, baseTime, e.store.put(nil), checkpoint.Stats{})
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), Mode: RestoreState, DryRun: true})
	if err != nil || len(res.RevertedDecisions) != 0 {
		t.Errorf("dry with no plan: %+v, %v", res, err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), Mode: RestoreState, DryRun: true}); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("dry with plans failing: %v", err)
	}
}

func TestRollbackToATime(t *testing.T) {
	e := newUseCaseEnv(t)
	old := e.checkpointAt(t, baseTime.Add(-2*time.Hour), e.store.put(nil), checkpoint.Stats{})
	e.checkpointAt(t, baseTime.Add(-time.Hour), e.store.put(nil), checkpoint.Stats{})
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{At: timePtr(baseTime.Add(-90 * time.Minute)), DryRun: true})
	if err != nil || res.Target.ID() != old.ID() {
		t.Errorf("at -90m: %v, %v; want the checkpoint of -2h", res.Target, err)
	}
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{At: timePtr(baseTime.Add(-3 * time.Hour))})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "at or before") {
		t.Errorf("before every checkpoint: %v", err)
	}
	// The zero time is a time like any other: before every checkpoint, not "no time given".
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{At: timePtr(time.Time{}), DryRun: true})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "0001-01-01 00:00:00 +0000") {
		t.Errorf("at the zero time: %v; want not found", err)
	}
	e.repo.listErr = errors.New("db down")
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{At: timePtr(baseTime), DryRun: true}); !errors.Is(err, e.repo.listErr) {
		t.Errorf("list failing: %v", err)
	}
}

func timePtr(t time.Time) *time.Time { return &t }
