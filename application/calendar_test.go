package application

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// inUTC makes the local zone UTC for the test: calendar buckets are local days.
func inUTC(t *testing.T) {
	old := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = old })
}

// The clock stands at 2025-03-01 12:00 UTC (a Saturday).
func TestPruneCalendarKeepsTheNewestOfEachBucket(t *testing.T) {
	inUTC(t)
	e := newUseCaseEnv(t)
	at := func(age time.Duration) *checkpoint.Checkpoint {
		return e.typedCheckpoint(t, age, checkpoint.Manual, nil, false)
	}
	oldest := at(24 * 40 * time.Hour)           // 2025-01-20: January
	febA := at(24 * 9 * time.Hour)              // 2025-02-20 (week 8)
	febB := at(24*9*time.Hour - 30*time.Minute) // same day, newer
	fri := at(25 * time.Hour)                   // 2025-02-28 11:00
	friNewer := at(23 * time.Hour)              // 2025-02-28 13:00
	satA := at(2 * time.Hour)                   // 2025-03-01 10:00
	satB := at(30 * time.Minute)                // 2025-03-01 11:30

	res, err := e.ms.Prune(context.Background(), PruneRequest{Calendar: checkpoint.Calendar{Daily: 2}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	// Newest of each of the 2 most recent days: satB and friNewer; every other goes.
	if !slices.Equal(res.Kept, []checkpoint.ID{satB.ID(), friNewer.ID()}) {
		t.Fatalf("kept %v", res.Kept)
	}
	if why := res.Reasons[satB.ID()]; why != "newest checkpoint of 2025-03-01 (--keep-daily)" {
		t.Errorf("reason: %q", why)
	}
	// Monthly 3 and weekly 1, with --keep 1 (a union): satB (--keep, March, week 9), friNewer (the
	// newest of February), oldest (January, the third month).
	res, err = e.ms.Prune(context.Background(), PruneRequest{Keep: 1, Calendar: checkpoint.Calendar{Monthly: 3, Weekly: 1}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []checkpoint.ID{satB.ID(), friNewer.ID(), oldest.ID()}
	if !slices.Equal(res.Kept, want) {
		t.Fatalf("kept %v, want %v", res.Kept, want)
	}
	if !strings.Contains(res.Reasons[friNewer.ID()], "2025-02 (--keep-monthly)") || !strings.Contains(res.Reasons[oldest.ID()], "2025-01") {
		t.Errorf("reasons: %v", res.Reasons)
	}
	// Hourly 24 with few checkpoints: each hour's newest, and the oldest kept while buckets remain.
	res, err = e.ms.Prune(context.Background(), PruneRequest{Calendar: checkpoint.Calendar{Hourly: 100}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Kept, febA.ID()) || !slices.Contains(res.Kept, febB.ID()) || !slices.Contains(res.Kept, oldest.ID()) || !slices.Contains(res.Kept, satA.ID()) || !slices.Contains(res.Kept, fri.ID()) {
		t.Errorf("hourly kept %v", res.Kept)
	}
	// The oldest is kept "oldest" when it shares a bucket with a newer one kept already.
	e2 := newUseCaseEnv(t)
	n := e2.typedCheckpoint(t, time.Hour, checkpoint.Manual, nil, false)
	o := e2.typedCheckpoint(t, 2*time.Hour, checkpoint.Manual, nil, false)
	res, err = e2.ms.Prune(context.Background(), PruneRequest{Calendar: checkpoint.Calendar{Monthly: 5}})
	if err != nil || len(res.Deleted) != 0 || !strings.HasPrefix(res.Reasons[o.ID()], "oldest checkpoint of 2025-03") || res.Reasons[n.ID()] == "" {
		t.Errorf("oldest rule: %+v, %v", res, err)
	}
}

func TestPruneCalendarNeverTakesWhatIsNeeded(t *testing.T) {
	inUTC(t)
	e := newUseCaseEnv(t)
	pinned := e.typedCheckpoint(t, 24*10*time.Hour, checkpoint.Manual, nil, true)
	e.typedCheckpoint(t, 24*5*time.Hour, checkpoint.Manual, nil, false)
	e.typedCheckpoint(t, time.Hour, checkpoint.Manual, nil, false)
	res, err := e.ms.Prune(context.Background(), PruneRequest{Calendar: checkpoint.Calendar{Daily: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || !strings.HasPrefix(res.Reasons[pinned.ID()], "pinned") {
		t.Errorf("%+v", res)
	}
	if _, err := e.ms.Prune(context.Background(), PruneRequest{Calendar: checkpoint.Calendar{Weekly: -1}}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "--keep-weekly") {
		t.Errorf("negative rule: %v", err)
	}
}

func TestPruneByPolicyWithCalendar(t *testing.T) {
	inUTC(t)
	e := newUseCaseEnv(t)
	e.typedCheckpoint(t, 48*time.Hour, checkpoint.Manual, nil, false)
	e.typedCheckpoint(t, time.Hour, checkpoint.Manual, nil, false)
	e.settings.rule, e.settings.ok = port.RetentionRule{Calendar: checkpoint.Calendar{Daily: 1}}, true
	res, err := e.ms.PruneByPolicy(context.Background(), true)
	if err != nil || len(res.Deleted) != 1 || len(res.Kept) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	got, ok, err := e.ms.ApplyRetention(context.Background())
	if err != nil || !ok || len(got.Checkpoints.Deleted) != 1 {
		t.Fatalf("apply: %+v, %v, %v", got, ok, err)
	}
	if keepOf(port.RetentionRule{Calendar: checkpoint.Calendar{Daily: 1}}) != 0 || keepOf(port.RetentionRule{}) != math.MaxInt {
		t.Error("keep of a policy")
	}
}

// Prune keeps what the next undo and redo need, and lists the operations whose safety checkpoint it
// deletes; checkpoint delete refuses the next undo's without --force.
func TestPruneAndUndoNeeds(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	e.ops.oplog = log
	hs := NewHistoryService(e.ops, log)
	ops := loggedABC(t, e, hs)
	// Only undo protects here: the decisions are reverted, so their live protection is gone.
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	u := log.ops[0]
	res, err := e.ms.Prune(context.Background(), PruneRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Reasons[ops[1].UndoCheckpoint], "the next `plan undo`") && !strings.Contains(res.Reasons[ops[1].UndoCheckpoint], "live decision") {
		t.Errorf("b's checkpoint: %q", res.Reasons[ops[1].UndoCheckpoint])
	}
	if why := res.Reasons[u.Checkpoints[1]]; !strings.Contains(why, "`plan redo` rolls forward to it") {
		t.Errorf("the redo checkpoint: %q", why)
	}
	if _, err := e.cps.Delete(context.Background(), string(u.Checkpoints[1]), false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("delete of the redo checkpoint: %v", err)
	}
	// Redo, then everything after the run goes but the next undo's: c's checkpoint is live, and the
	// next undo is c's; none is lost.
	if _, err := hs.Redo(context.Background(), RedoRequest{}); err != nil {
		t.Fatal(err)
	}
	res, err = e.ms.Prune(context.Background(), PruneRequest{DryRun: true})
	if err != nil || len(res.UndoLost) != 0 {
		t.Errorf("%+v, %v", res.UndoLost, err)
	}
	// A decision's live protection gone (reverted by a rollback to before b): its undo is lost.
	log.ops = append([]port.LoggedOperation{{ID: "zz", Kind: "rollback", Outcome: "ok", UndoCheckpoint: ops[0].UndoCheckpoint}}, log.ops...)
	res, err = e.ms.Prune(context.Background(), PruneRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reasons[ops[0].UndoCheckpoint] == "" {
		t.Errorf("the newest undo's checkpoint is not kept: %v", res.Reasons)
	}
	log.listErr = errors.New("db down")
	if _, err := e.ms.Prune(context.Background(), PruneRequest{DryRun: true}); !errors.Is(err, log.listErr) {
		t.Errorf("log unreadable: %v", err)
	}
}

func TestPruneUndoLost(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	e.ops.oplog = log
	old := e.typedCheckpoint(t, 3*time.Hour, checkpoint.PreRollback, nil, false)
	newer := e.typedCheckpoint(t, 2*time.Hour, checkpoint.PreRollback, nil, false)
	log.ops = []port.LoggedOperation{
		{ID: "r2", Kind: "rollback", Outcome: "ok", UndoCheckpoint: newer.ID()},
		{ID: "r1", Kind: "rollback", Outcome: "ok", UndoCheckpoint: old.ID()},
	}
	res, err := e.ms.Prune(context.Background(), PruneRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []checkpoint.ID{old.ID()}) || len(res.UndoLost) != 1 || res.UndoLost[0].ID != "r1" {
		t.Errorf("%+v", res)
	}
	// The log failing after the protection was read: the prune stops before deleting anything.
	e.typedCheckpoint(t, 4*time.Hour, checkpoint.Manual, nil, false)
	calls := 0
	e.ops.oplog = &countingLog{fakeOpLog: log, failAfter: 1, calls: &calls}
	if _, err := e.ms.Prune(context.Background(), PruneRequest{}); err == nil || len(e.repo.cps) != 2 {
		t.Errorf("err %v, %d checkpoints left", err, len(e.repo.cps))
	}
}

// countingLog fails List after failAfter calls.
type countingLog struct {
	*fakeOpLog
	failAfter int
	calls     *int
}

func (l *countingLog) List(ctx context.Context, limit int, plan string) ([]port.LoggedOperation, error) {
	*l.calls++
	if *l.calls > l.failAfter {
		return nil, errors.New("db down")
	}
	return l.fakeOpLog.List(ctx, limit, plan)
}
