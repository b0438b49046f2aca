package application

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
)

// replacingLog is a fakeOpLog that can also replace entries, counting every write and the
// transaction each was made in.
type replacingLog struct {
	fakeOpLog
	tx         *fakeTx
	replaces   int
	inTx       []int // fakeTx.calls at each Replace
	replaceErr error
}

func (l *replacingLog) Replace(_ context.Context, op port.LoggedOperation) error {
	if l.replaceErr != nil {
		return l.replaceErr
	}
	l.replaces++
	l.inTx = append(l.inTx, l.tx.calls)
	l.ops = slices.DeleteFunc(l.ops, func(x port.LoggedOperation) bool { return x.ID == op.ID })
	l.put(op)
	return nil
}

// countingRepo counts the checkpoints added and the transaction each was added in.
type countingRepo struct {
	*fakeRepo
	tx       *fakeTx
	adds     []int
	err      error
	sinceErr error
}

func (r *countingRepo) Add(ctx context.Context, c *checkpoint.Checkpoint) error {
	if r.err != nil {
		return r.err
	}
	r.adds = append(r.adds, r.tx.calls)
	return r.fakeRepo.Add(ctx, c)
}

func (r *countingRepo) ListSince(ctx context.Context, t time.Time) ([]*checkpoint.Checkpoint, error) {
	if r.sinceErr != nil {
		return nil, r.sinceErr
	}
	return r.fakeRepo.ListSince(ctx, t)
}

// rollbackTx is fakeTx that, like a database, undoes the checkpoints a failed transaction added.
type rollbackTx struct {
	*fakeTx
	repo *fakeRepo
}

func (t rollbackTx) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	before := maps.Clone(t.repo.cps)
	err := t.fakeTx.Do(ctx, fn)
	if err != nil {
		t.repo.cps = before
	}
	return err
}

func foldEnv(t *testing.T) (*useCaseEnv, *replacingLog, *countingRepo, *HistoryService) {
	t.Helper()
	e := newUseCaseEnv(t)
	repo := &countingRepo{fakeRepo: e.repo, tx: e.tx}
	e.ops.checkpoints = repo
	e.ops.tx = rollbackTx{fakeTx: e.tx, repo: e.repo}
	e.rewire()
	log := &replacingLog{tx: e.tx}
	return e, log, repo, NewHistoryService(e.ops, log)
}

func openCheckpointCreate(e *useCaseEnv) *Recording {
	return NewRecording("checkpoint", []string{"checkpoint", "create"}, "", e.clock.Now())
}

// A checkpoint whose command records its operation commits the checkpoint and the entry in one
// transaction, and finishing the command as folded writes nothing more: one durable write.
func TestCheckpointCreateFoldsItsLogEntryIntoItsTransaction(t *testing.T) {
	e, log, repo, hs := foldEnv(t)
	open := openCheckpointCreate(e)
	ctx := WithRecording(context.Background(), open)
	before := e.tx.calls
	cp, err := e.cps.Create(ctx, CreateRequest{Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.tx.calls - before; got != 1 {
		t.Fatalf("transactions: %d, want 1", got)
	}
	if len(repo.adds) != 1 || len(log.inTx) != 1 || repo.adds[0] != log.inTx[0] {
		t.Fatalf("checkpoint added in tx %v, entry written in tx %v: want the same single one", repo.adds, log.inTx)
	}
	if err := hs.Finish(context.Background(), open, "ok"); err != nil {
		t.Fatal(err)
	}
	if log.replaces != 1 || len(log.ops) != 1 || e.tx.calls-before != 1 {
		t.Fatalf("finish wrote again: %d replaces, %d entries, %d transactions", log.replaces, len(log.ops), e.tx.calls-before)
	}
	got := log.ops[0]
	if got.ID == "" || got.Outcome != "ok" || len(got.Checkpoints) != 1 || got.Checkpoints[0] != cp.ID() || got.FinishedAt.IsZero() {
		t.Fatalf("entry: %+v", got)
	}
}

// A service called without a recording (a host's call) records its own operation, and folds it
// the same way: one transaction, one entry.
func TestAHostsCheckpointIsOneDurableWriteToo(t *testing.T) {
	e, log, _, _ := foldEnv(t)
	before := e.tx.calls
	cp, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if e.tx.calls-before != 1 || log.replaces != 1 || len(log.ops) != 1 || log.ops[0].Checkpoints[0] != cp.ID() {
		t.Fatalf("%d transactions, %d replaces, log %+v", e.tx.calls-before, log.replaces, log.ops)
	}
}

// A command that fails after its folded transaction gets its entry replaced with the outcome it
// ended with; the replacement keeps the folded ID.
func TestFinishReplacesAFoldedEntryTheCommandOutlived(t *testing.T) {
	e, log, _, hs := foldEnv(t)
	open := openCheckpointCreate(e)
	if _, err := e.cps.Create(WithRecording(context.Background(), open), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	id := open.folded.ID
	if err := hs.Finish(context.Background(), open, "internal"); err != nil {
		t.Fatal(err)
	}
	if log.replaces != 2 || len(log.ops) != 1 || log.ops[0].Outcome != "internal" || log.ops[0].ID != id {
		t.Fatalf("replaces %d, log %+v", log.replaces, log.ops)
	}
	if err := hs.Finish(context.Background(), open, "ok"); err != nil || log.replaces != 2 {
		t.Fatalf("a second finish wrote again: %v, %d", err, log.replaces)
	}
}

// A log that cannot replace gets the entry in a write of its own, when the command finishes; so
// does an operation that logs its decisions too (its entry is complete only once they ran).
func TestFinishWithoutAFoldRecords(t *testing.T) {
	plain := newUseCaseEnv(t)
	plog := &fakeOpLog{}
	phs := NewHistoryService(plain.ops, plog)
	open := openCheckpointCreate(plain)
	if _, err := plain.cps.Create(WithRecording(context.Background(), open), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if open.folded != nil || len(plog.ops) != 0 {
		t.Fatal("a log without Replace was folded into")
	}
	if err := phs.Finish(context.Background(), open, "ok"); err != nil || len(plog.ops) != 1 {
		t.Fatalf("finish: %v, log %+v", err, plog.ops)
	}

	e, log, _, _ := foldEnv(t)
	run := NewRecording("run", []string{"run", "p.yaml"}, "", e.clock.Now())
	if _, err := e.cps.Create(WithRecording(context.Background(), run), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if run.folded != nil || log.replaces != 0 {
		t.Fatal("an operation that logs its decisions was folded")
	}
	if _, err := e.cps.Create(Unrecorded(context.Background()), CreateRequest{}); err != nil || log.replaces != 0 || len(log.ops) != 0 {
		t.Fatalf("an unrecorded call was logged: %v, %+v", err, log.ops)
	}
}

// An entry that cannot be written does not cost the checkpoint: it is made alone, and the entry
// is left to be written after the command.
func TestAFailedFoldLeavesTheCheckpointAlone(t *testing.T) {
	e, log, repo, _ := foldEnv(t)
	log.replaceErr = errors.New("disk full")
	open := openCheckpointCreate(e)
	cp, err := e.cps.Create(WithRecording(context.Background(), open), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if open.folded != nil || len(repo.adds) != 2 {
		t.Fatalf("folded %v, adds %v: want the checkpoint made again alone", open.folded, repo.adds)
	}
	if _, err := e.repo.Get(context.Background(), cp.ID()); err != nil {
		t.Fatal(err)
	}

	e2, _, repo2, _ := foldEnv(t)
	repo2.err = errors.New("database gone")
	open2 := openCheckpointCreate(e2)
	if _, err := e2.cps.Create(WithRecording(context.Background(), open2), CreateRequest{}); !errors.Is(err, repo2.err) {
		t.Fatalf("err %v", err)
	}
	if open2.folded != nil {
		t.Fatal("a failed change left its entry folded")
	}
}

// The fold lists the checkpoints created since the command started; one that cannot be listed
// is a failed fold.
func TestAFoldThatCannotListFallsBack(t *testing.T) {
	e, log, repo, _ := foldEnv(t)
	repo.sinceErr = errors.New("list failed")
	open := openCheckpointCreate(e)
	if _, err := e.cps.Create(WithRecording(context.Background(), open), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if open.folded != nil || log.replaces != 0 || len(repo.adds) != 2 {
		t.Fatalf("folded %v, replaces %d, adds %v", open.folded, log.replaces, repo.adds)
	}
	if msg := (&foldError{errors.New("disk full")}).Error(); msg != "operation log: disk full" {
		t.Fatalf("fold error: %q", msg)
	}
}
