package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// budgetSettings is fakeSettings with a disk budget.
type budgetSettings struct {
	fakeSettings
	max, quota    int64
	err, errQuota error
}

func (s *budgetSettings) StoreBudget() (int64, error)    { return s.max, s.err }
func (s *budgetSettings) WorkspaceQuota() (int64, error) { return s.quota, s.errQuota }

// budgetHealth is a store whose size is 100 bytes per checkpoint left, as a gc would leave it.
type budgetHealth struct {
	*fakeHealth
	repo  *fakeRepo
	extra int64 // what no checkpoint holds
}

func (h *budgetHealth) Usage() port.StoreUsage {
	return port.StoreUsage{StoredBytes: int64(100*len(h.repo.cps)) + h.extra}
}

type budgetEnv struct {
	*useCaseEnv
	settings *budgetSettings
	health   *budgetHealth
	log      *fakeOpLog
	ids      []checkpoint.ID // oldest first
}

func newBudgetEnv(t *testing.T, checkpoints int, max int64) *budgetEnv {
	t.Helper()
	e := &budgetEnv{useCaseEnv: newUseCaseEnv(t), settings: &budgetSettings{max: max}, log: &fakeOpLog{}}
	e.health = &budgetHealth{fakeHealth: e.useCaseEnv.health, repo: e.repo}
	e.ms = NewMaintenanceService(MaintenanceParams{Ops: e.ops, Store: e.health, Settings: e.settings, Log: e.log})
	for i := range checkpoints {
		cp := e.checkpointAt(t, baseTime.Add(time.Duration(i-checkpoints)*time.Hour), tree.Sum([]byte{byte(i)}), checkpoint.Stats{})
		e.ids = append(e.ids, cp.ID())
	}
	return e
}

func (e *budgetEnv) left() []checkpoint.ID {
	var out []checkpoint.ID
	for _, id := range e.ids {
		if _, ok := e.repo.cps[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

func TestBudgetWithoutOne(t *testing.T) {
	e := newUseCaseEnv(t) // its settings read no budget
	st, err := e.ms.EnforceBudget(context.Background())
	if err != nil || st.MaxBytes != 0 || st.Over() || st.Warning() != "" || st.Percent() != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
	b := newBudgetEnv(t, 3, 0) // configured as none
	if st, err := b.ms.BudgetReport(context.Background()); err != nil || st.MaxBytes != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
}

func TestBudgetWarnsFromEightyPercent(t *testing.T) {
	e := newBudgetEnv(t, 7, 1000)
	st, err := e.ms.BudgetReport(context.Background())
	if err != nil || st.Over() || st.Warning() != "" {
		t.Fatalf("70%%: %+v, %v, %q", st, err, st.Warning())
	}
	e = newBudgetEnv(t, 9, 1000)
	st, err = e.ms.EnforceBudget(context.Background())
	if err != nil || len(st.Pruned) != 0 || !strings.Contains(st.Warning(), "90% of its budget") {
		t.Fatalf("90%%: %+v, %v, %q", st, err, st.Warning())
	}
}

// Past the budget, the oldest checkpoints nothing needs go, in growing batches with a gc after
// each, until the store fits; the newest, a pinned one, a live decision's pre_decision checkpoint
// and the safety checkpoint of the newest undo stay.
func TestBudgetPrunesTheOldestCheckpointsNothingNeeds(t *testing.T) {
	e := newBudgetEnv(t, 10, 450)
	ctx := context.Background()
	pinned, decision, safety, older := e.ids[0], e.ids[1], e.ids[3], e.ids[2]
	e.repo.cps[pinned].SetPinned(true)
	p := plan.Rehydrate("p1", "p", "", true, baseTime, []plan.DecisionState{
		{Def: plan.Definition{ID: "d", Run: "x"}, Attempts: []*plan.Attempt{{Number: 1, Status: plan.Succeeded, CheckpointID: decision}}},
	})
	if err := e.plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	e.log.ops = []port.LoggedOperation{
		{ID: "new", Kind: "rollback", UndoCheckpoint: safety},
		{ID: "old", Kind: "rollback", UndoCheckpoint: older}, // not the newest undo: prunable
	}
	st, err := e.ms.BudgetReport(ctx)
	if err != nil || !st.Over() || st.Prunable != 6 || !strings.Contains(st.Warning(), "prunes the oldest of the 6") {
		t.Fatalf("report: %+v, %v, %q", st, err, st.Warning())
	}
	st, err = e.ms.EnforceBudget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Over() || st.UsedBytes != 400 || st.GC == nil || len(e.health.roots) != 3 {
		t.Fatalf("after: %+v (gc runs %d)", st, len(e.health.roots))
	}
	// Batches of 1, 2 and 4 would overshoot: 1, then 2, then the rest it needed.
	want := []checkpoint.ID{older, e.ids[4], e.ids[5], e.ids[6], e.ids[7], e.ids[8]}
	if !slices.Equal(st.Pruned, want[:len(st.Pruned)]) {
		t.Fatalf("pruned %v, want a prefix of %v", st.Pruned, want)
	}
	for _, id := range []checkpoint.ID{pinned, decision, safety, e.ids[9]} {
		if _, ok := e.repo.cps[id]; !ok {
			t.Fatalf("the budget pruned %s, which is needed", id)
		}
	}
}

// When nothing more can be pruned the store stays over its budget, the newest state is kept, and
// the warning says what holds it.
func TestBudgetNothingToFree(t *testing.T) {
	e := newBudgetEnv(t, 3, 150)
	e.repo.cps[e.ids[0]].SetPinned(true)
	e.log.ops = []port.LoggedOperation{{ID: "r", Kind: "revert", UndoCheckpoint: e.ids[1]}}
	st, err := e.ms.EnforceBudget(context.Background())
	if err != nil || len(st.Pruned) != 0 || !st.Over() {
		t.Fatalf("%+v, %v", st, err)
	}
	w := st.Warning()
	for _, part := range []string{"over its budget", "1 pinned", "1 safety checkpoint of the newest undo", "1 the newest checkpoint", "never given up"} {
		if !strings.Contains(w, part) {
			t.Fatalf("warning %q lacks %q", w, part)
		}
	}
	if len(e.left()) != 3 {
		t.Fatal("a needed checkpoint went")
	}
	if r, err := e.ms.BudgetReport(context.Background()); err != nil || r.Held == "" || r.Prunable != 0 {
		t.Fatalf("report: %+v, %v", r, err)
	}
}

func TestBudgetFailures(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	e := newBudgetEnv(t, 3, 10)
	e.settings.err = boom
	if _, err := e.ms.EnforceBudget(ctx); !errors.Is(err, boom) {
		t.Fatalf("settings: %v", err)
	}
	if _, err := e.ms.BudgetReport(ctx); !errors.Is(err, boom) {
		t.Fatalf("settings: %v", err)
	}
	for name, arm := range map[string]func(e *budgetEnv){
		"list":    func(e *budgetEnv) { e.repo.listErr = boom },
		"delete":  func(e *budgetEnv) { e.repo.deleteErr = boom },
		"collect": func(e *budgetEnv) { e.health.collectErr = boom },
		"log":     func(e *budgetEnv) { e.log.listErr = boom },
		"plans":   func(e *budgetEnv) { e.plans.currentErr = boom },
		"lock":    func(e *budgetEnv) { e.l.err = boom },
	} {
		t.Run(name, func(t *testing.T) {
			e := newBudgetEnv(t, 3, 10)
			arm(e)
			if _, err := e.ms.EnforceBudget(ctx); !errors.Is(err, boom) {
				t.Fatalf("EnforceBudget: %v", err)
			}
		})
	}
	for name, arm := range map[string]func(e *budgetEnv){
		"list": func(e *budgetEnv) { e.repo.listErr = boom },
		"log":  func(e *budgetEnv) { e.log.listErr = boom },
	} {
		t.Run("report "+name, func(t *testing.T) {
			e := newBudgetEnv(t, 3, 10)
			arm(e)
			if _, err := e.ms.BudgetReport(ctx); !errors.Is(err, boom) {
				t.Fatalf("BudgetReport: %v", err)
			}
		})
	}
}

func TestBudgetTexts(t *testing.T) {
	for n, want := range map[int64]string{12: "12 B", 3 << 10: "3 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
	for why, want := range map[string]string{
		"pre_decision checkpoint of live decision d (attempt 1): …": "pre_decision checkpoint(s) of live decisions",
		"safety checkpoint of unfinished correction c":              "checkpoint(s) of an unfinished correction",
		"something else": "something else",
	} {
		if got := budgetReason(why); got != want {
			t.Errorf("budgetReason(%q) = %q, want %q", why, got, want)
		}
	}
	over := BudgetStatus{MaxBytes: 10, UsedBytes: 20}
	if w := over.Warning(); !strings.Contains(w, "over its budget") || strings.Contains(w, ": nothing") {
		t.Fatalf("bare over warning: %q", w)
	}
}

// A store over its budget with no checkpoint left has nothing to prune, and says so.
func TestBudgetWithNoCheckpoint(t *testing.T) {
	e := newBudgetEnv(t, 0, 10)
	e.health.extra = 50
	st, err := e.ms.BudgetReport(context.Background())
	if err != nil || !st.Over() || st.Prunable != 0 || st.Held == "" {
		t.Fatalf("report: %+v, %v", st, err)
	}
	st, err = e.ms.EnforceBudget(context.Background())
	if err != nil || !st.Over() || len(st.Pruned) != 0 || st.GC != nil || !strings.Contains(st.Warning(), "nothing more can be freed") {
		t.Fatalf("enforce: %+v, %v", st, err)
	}
}

// A checkpoint needed for several reasons is named for the first: pinned before the newest, a live
// decision before the undo.
func TestBudgetFirstReasonCounts(t *testing.T) {
	e := newBudgetEnv(t, 2, 50)
	e.repo.cps[e.ids[1]].SetPinned(true)
	e.repo.cps[e.ids[0]].SetPinned(true)
	e.log.ops = []port.LoggedOperation{{ID: "u", Kind: "rollback", UndoCheckpoint: e.ids[0]}}
	st, err := e.ms.BudgetReport(context.Background())
	if err != nil || !strings.Contains(st.Held, "2 pinned") || strings.Contains(st.Held, "the newest checkpoint") || strings.Contains(st.Held, "safety") {
		t.Fatalf("%+v, %v", st, err)
	}
}

// On a shared store the budget only warns: pruning cannot be measured against a gc that frees
// space after its grace period.
func TestBudgetOnASharedStoreOnlyWarns(t *testing.T) {
	e := newBudgetEnv(t, 5, 100)
	shared := &sharedHealth{budgetHealth: e.health}
	e.ms = NewMaintenanceService(MaintenanceParams{Ops: e.ops, Store: shared, Settings: e.settings, Log: e.log})
	for _, f := range []func(context.Context) (BudgetStatus, error){e.ms.EnforceBudget, e.ms.BudgetReport} {
		st, err := f(context.Background())
		if err != nil || len(st.Pruned) != 0 || !strings.Contains(st.Warning(), "shared store is not pruned") || len(e.left()) != 5 {
			t.Fatalf("%+v, %v", st, err)
		}
	}
}

type sharedHealth struct{ *budgetHealth }

func (h *sharedHealth) Usage() port.StoreUsage {
	u := h.budgetHealth.Usage()
	u.Location = "s3://bucket/plans"
	return u
}

// quotaHealth is a shared store that measures a workspace's share as 100 bytes per checkpoint, and
// the whole store as ten times that (other workspaces' content).
type quotaHealth struct {
	*budgetHealth
	err error
}

func (h *quotaHealth) Usage() port.StoreUsage {
	u := h.budgetHealth.Usage()
	u.StoredBytes *= 10
	u.Location = "s3://bucket/plans"
	return u
}

func (h *quotaHealth) WorkspaceBytes(roots []tree.Hash) (int64, error) {
	return int64(100 * len(h.repo.cps)), h.err
}

// On a shared store, store.workspace_max_bytes bounds what this workspace's checkpoints
// reference: past it, its oldest checkpoints nothing needs go, measured without waiting for the
// store's gc, which runs once after.
func TestBudgetWorkspaceQuota(t *testing.T) {
	ctx := context.Background()
	e := newBudgetEnv(t, 6, 0)
	e.settings.quota = 350
	q := &quotaHealth{budgetHealth: e.health}
	e.ms = NewMaintenanceService(MaintenanceParams{Ops: e.ops, Store: q, Settings: e.settings, Log: e.log})
	st, err := e.ms.BudgetReport(ctx)
	if err != nil || !st.Quota || st.UsedBytes != 600 || st.Prunable != 5 || !strings.Contains(st.Warning(), "store.workspace_max_bytes") {
		t.Fatalf("report: %+v, %v, %q", st, err, st.Warning())
	}
	st, err = e.ms.EnforceBudget(ctx)
	if err != nil || st.Over() || st.UsedBytes != 300 || len(st.Pruned) != 3 || len(e.health.roots) != 1 || st.GC == nil {
		t.Fatalf("enforce: %+v, %v (gc runs %d)", st, err, len(e.health.roots))
	}
	if w := (BudgetStatus{MaxBytes: 100, UsedBytes: 90, Quota: true}).Warning(); !strings.Contains(w, "this workspace's checkpoints take") {
		t.Fatalf("warning: %q", w)
	}
	// Its errors: the setting, the measure, the gc after.
	boom := errors.New("boom")
	e.settings.errQuota = boom
	if _, err := e.ms.Budget(ctx); !errors.Is(err, boom) {
		t.Fatalf("quota setting: %v", err)
	}
	e.settings.errQuota = nil
	e.settings.quota = 10
	q.err = boom
	if _, err := e.ms.Budget(ctx); !errors.Is(err, boom) {
		t.Fatalf("measure: %v", err)
	}
	q.err = nil
	e.health.collectErr = boom
	if _, err := e.ms.EnforceBudget(ctx); !errors.Is(err, boom) {
		t.Fatalf("gc: %v", err)
	}
	// Without a quota, store.max_bytes on a shared store only warns.
	e.settings.quota, e.settings.max = 0, 10
	if st, err := e.ms.EnforceBudget(ctx); err != nil || st.Quota || !strings.Contains(st.Held, "store.workspace_max_bytes") {
		t.Fatalf("shared max_bytes: %+v, %v", st, err)
	}
}
