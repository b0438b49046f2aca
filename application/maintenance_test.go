package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

var someRoot = tree.Sum([]byte("some root"))

func ids(cps ...*checkpoint.Checkpoint) []checkpoint.ID {
	out := make([]checkpoint.ID, len(cps))
	for i, c := range cps {
		out[i] = c.ID()
	}
	return out
}

// fiveCheckpoints adds checkpoints made 1h, 1d, 2d, 3d and 4d before the clock's time, returned
// newest first.
func fiveCheckpoints(t *testing.T, e *useCaseEnv) []*checkpoint.Checkpoint {
	t.Helper()
	var out []*checkpoint.Checkpoint
	for _, ago := range []time.Duration{time.Hour, 24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 96 * time.Hour} {
		out = append(out, e.checkpointAt(t, baseTime.Add(-ago), someRoot, checkpoint.Stats{}))
	}
	return out
}

func TestPruneKeep(t *testing.T) {
	e := newUseCaseEnv(t)
	cps := fiveCheckpoints(t, e)

	res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Kept, ids(cps[:2]...)) || !slices.Equal(res.Deleted, ids(cps[2:]...)) || len(res.Reasons) != 0 {
		t.Fatalf("dry run: %+v", res)
	}
	if len(e.repo.cps) != 5 {
		t.Fatalf("a dry run deleted %d checkpoints", 5-len(e.repo.cps))
	}

	res, err = e.ms.Prune(context.Background(), PruneRequest{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, ids(cps[2:]...)) {
		t.Fatalf("prune: %+v", res)
	}
	for _, c := range cps {
		_, err := e.repo.Get(context.Background(), c.ID())
		if kept := err == nil; kept != slices.Contains(res.Kept, c.ID()) {
			t.Errorf("%s kept=%v, result says %+v", c.ID(), kept, res)
		}
	}
	if e.l.held || e.l.locks != 2 || e.l.purposes[0] != "checkpoint prune" {
		t.Errorf("lock: held %v, %d locks %q", e.l.held, e.l.locks, e.l.purposes)
	}

	// Keeping more than there are deletes nothing.
	if res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 10}); err != nil || len(res.Deleted) != 0 || len(res.Kept) != 2 {
		t.Errorf("keep 10: %+v %v", res, err)
	}
}

func TestPruneOlderThan(t *testing.T) {
	e := newUseCaseEnv(t)
	cps := fiveCheckpoints(t, e)
	res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 0, OlderThan: 36 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Kept, ids(cps[:2]...)) || !slices.Equal(res.Deleted, ids(cps[2:]...)) {
		t.Fatalf("older than 36h: %+v", res)
	}
	for _, c := range cps[:2] {
		if res.Reasons[c.ID()] != "newer than --older-than" {
			t.Errorf("reason for %s: %q", c.ID(), res.Reasons[c.ID()])
		}
	}
	// --keep wins over --older-than for the newest.
	e = newUseCaseEnv(t)
	cps = fiveCheckpoints(t, e)
	res, err = e.ms.Prune(context.Background(), PruneRequest{Keep: 4, OlderThan: time.Minute})
	if err != nil || !slices.Equal(res.Deleted, ids(cps[4])) || len(res.Reasons) != 0 {
		t.Fatalf("keep 4, older than 1m: %+v %v", res, err)
	}
}

func TestPruneProtects(t *testing.T) {
	e := newUseCaseEnv(t)
	cps := fiveCheckpoints(t, e) // newest first: 0..4
	// The current plan: "live" ran from cps[3] and succeeded; "undone" ran from cps[4] but was reverted;
	// "never" has no attempt; "nocp" ran without a checkpoint.
	at := baseTime.Add(-100 * time.Hour)
	p := plan.Rehydrate("p1", "p", "", true, at, []plan.DecisionState{
		{Def: plan.Definition{ID: "live", Run: "x"}, Attempts: []*plan.Attempt{
			{Number: 1, Status: plan.Failed, CheckpointID: cps[4].ID(), StartedAt: at},
			{Number: 2, Status: plan.Succeeded, CheckpointID: cps[3].ID(), StartedAt: at},
		}},
		{Def: plan.Definition{ID: "undone", Run: "x"}, Attempts: []*plan.Attempt{
			{Number: 1, Status: plan.Reverted, CheckpointID: cps[4].ID(), StartedAt: at},
		}},
		{Def: plan.Definition{ID: "never", Run: "x"}},
		{Def: plan.Definition{ID: "nocp", Run: "x"}, Attempts: []*plan.Attempt{{Number: 1, Status: plan.Succeeded}}},
	})
	if err := e.plans.Save(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// An unfinished correction protects its two checkpoints; a finished one protects nothing.
	unfinished := newTestCorrection(t, "live", cps[2].ID(), cps[1].ID())
	finished := newTestCorrection(t, "live", cps[4].ID(), cps[4].ID())
	if err := finished.StartReexecution(); err != nil {
		t.Fatal(err)
	}
	if err := finished.Finish(true, baseTime); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*correction.Correction{unfinished, finished} {
		if err := e.corrections.Add(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}

	res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, ids(cps[0], cps[4])) {
		t.Errorf("deleted %v, want only the unprotected %v", res.Deleted, ids(cps[0], cps[4]))
	}
	want := map[checkpoint.ID]string{
		cps[1].ID(): "rollback checkpoint of unfinished correction " + unfinished.ID(),
		cps[2].ID(): "safety checkpoint of unfinished correction " + unfinished.ID(),
		cps[3].ID(): "pre_decision checkpoint of live decision live (attempt 2): a correction rolls back to it",
	}
	for id, why := range want {
		if res.Reasons[id] != why {
			t.Errorf("reason for %s = %q, want %q", id, res.Reasons[id], why)
		}
	}
	if len(res.Reasons) != len(want) {
		t.Errorf("reasons %v", res.Reasons)
	}

	// A correction re-executing protects too (while the process re-executing it holds the lock).
	startReexecution(t, e, unfinished.ID())
	prot, err := e.ops.protected(context.Background())
	if err != nil || !strings.HasPrefix(prot[cps[1].ID()], "rollback checkpoint of unfinished") {
		t.Errorf("re-executing correction: %v %v", prot, err)
	}
	// Found re-executing by a later command, it was killed: recovery closes it as failed, and its
	// checkpoints are no longer protected.
	res, err = e.ms.Prune(context.Background(), PruneRequest{Keep: 0, DryRun: true})
	if unfinished, _ = e.corrections.Get(context.Background(), unfinished.ID()); err != nil || unfinished.Status() != correction.Failed || res.Reasons[cps[1].ID()] != "" {
		t.Errorf("stale re-executing correction: status %s, %+v %v", unfinished.Status(), res, err)
	}
}

// newTestCorrection returns a reverted correction of decision with its safety and rollback checkpoints.
func newTestCorrection(t *testing.T, decision string, safety, rollback checkpoint.ID) *correction.Correction {
	t.Helper()
	c, err := correction.New(correction.Params{
		ID: ident.New(baseTime), DecisionID: decision, Reason: "wrong",
		Scope:              []correction.Item{{DecisionID: decision, Attempt: 1}},
		SafetyCheckpointID: string(safety), RollbackCheckpointID: string(rollback), ArchiveDir: "/a", CreatedAt: baseTime,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failingRepo is a fakeRepo whose List or Delete fails.
type failingRepo struct {
	*fakeRepo
	listErr, deleteErr error
}

func (r failingRepo) List(ctx context.Context) ([]*checkpoint.Checkpoint, error) {
	if r.listErr != nil {
		return nil, r.listErr
	}
	return r.fakeRepo.List(ctx)
}

func (r failingRepo) Delete(ctx context.Context, id checkpoint.ID) error {
	if r.deleteErr != nil {
		return r.deleteErr
	}
	return r.fakeRepo.Delete(ctx, id)
}

// underLock is a context that already holds the workspace lock, as inside another use case: Enter
// neither locks nor recovers, so a failing fake is first met where the test means it to be.
func underLock() context.Context {
	return kernel.TestLocked(context.Background(), "test")
}

func TestMaintenanceListErrors(t *testing.T) {
	boom := errors.New("checkpoints table gone")
	e := newUseCaseEnv(t)
	e.ops.checkpoints = failingRepo{fakeRepo: e.repo, listErr: boom}
	e.rewire()
	if _, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 1}); !errors.Is(err, boom) {
		t.Errorf("prune: %v", err)
	}
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); !errors.Is(err, boom) || len(e.health.roots) != 0 {
		t.Errorf("gc: %v (collect called %d times)", err, len(e.health.roots))
	}
	if _, err := e.ms.Verify(context.Background(), "", false); !errors.Is(err, boom) {
		t.Errorf("verify: %v", err)
	}
	if _, err := e.ms.Stats(context.Background()); !errors.Is(err, boom) {
		t.Errorf("stats: %v", err)
	}
}

func TestPruneErrors(t *testing.T) {
	for _, req := range []PruneRequest{{Keep: -1}, {Keep: 1, OlderThan: -time.Hour}} {
		e := newUseCaseEnv(t)
		if _, err := e.ms.Prune(context.Background(), req); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: err = %v, want invalid input", req, err)
		}
		if e.l.locks != 0 {
			t.Errorf("%+v: invalid input took the lock", req)
		}
	}

	boom := errors.New("database gone")
	e := newUseCaseEnv(t)
	fiveCheckpoints(t, e)
	e.plans.currentErr = boom
	if _, err := e.ms.Prune(underLock(), PruneRequest{Keep: 1}); !errors.Is(err, boom) {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.currentErr = nil
	e.corrections.listErr = boom
	if _, err := e.ms.Prune(underLock(), PruneRequest{Keep: 1}); !errors.Is(err, boom) {
		t.Errorf("corrections failing: %v", err)
	}
	if len(e.repo.cps) != 5 || e.l.held {
		t.Errorf("a failed prune deleted %d checkpoints or kept the lock (%v)", 5-len(e.repo.cps), e.l.held)
	}

	e.l.err = fault.Conflict("busy")
	if _, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 1}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy workspace: %v", err)
	}

	e = newUseCaseEnv(t)
	cps := fiveCheckpoints(t, e)
	e.ops.checkpoints = failingRepo{fakeRepo: e.repo, deleteErr: boom}
	e.rewire()
	if _, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 1}); !errors.Is(err, boom) ||
		!strings.Contains(err.Error(), "prune "+string(cps[1].ID())) {
		t.Errorf("delete failing: %v", err)
	}
}

func TestApplyRetention(t *testing.T) {
	e := newUseCaseEnv(t)
	cps := fiveCheckpoints(t, e)
	if _, ok, err := e.ms.ApplyRetention(context.Background()); ok || err != nil || len(e.repo.cps) != 5 {
		t.Fatalf("no policy: ok=%v err=%v, %d checkpoints", ok, err, len(e.repo.cps))
	}
	e.settings.err = fault.Invalid("bad config")
	if _, ok, err := e.ms.ApplyRetention(context.Background()); ok || !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("bad policy: ok=%v err=%v", ok, err)
	}
	e.settings = fakeSettings{rule: port.RetentionRule{Keep: 1, OlderThan: 36 * time.Hour}, ok: true}
	res, ok, err := e.ms.ApplyRetention(context.Background())
	if !ok || err != nil || !slices.Equal(res.Checkpoints.Deleted, ids(cps[2:]...)) {
		t.Fatalf("keep 1 older than 36h: %+v ok=%v err=%v", res, ok, err)
	}
	e.settings.rule.Keep = -1 // reached only through a broken Settings: Prune still refuses it
	if _, ok, err := e.ms.ApplyRetention(context.Background()); !ok || !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("negative keep: ok=%v err=%v", ok, err)
	}
}

func TestGCRoots(t *testing.T) {
	e := newUseCaseEnv(t)
	a := e.checkpointAt(t, baseTime.Add(-2*time.Hour), tree.Sum([]byte("a")), checkpoint.Stats{})
	b := e.checkpointAt(t, baseTime.Add(-time.Hour), tree.Sum([]byte("b")), checkpoint.Stats{})

	// No plan: the checkpoints' roots, oldest first (the order a re-encoding gc pairs them in).
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := e.health.roots[0]; !slices.Equal(got, []tree.Hash{a.Root(), b.Root()}) {
		t.Errorf("roots without a plan: %v", got)
	}

	// With a plan: plus every attempt's result, a reverted one's too (an undo of the revert gives
	// it back its standing).
	kept, undone := tree.Sum([]byte("result 1")), tree.Sum([]byte("result 2"))
	p := plan.Rehydrate("p1", "p", "", true, baseTime, []plan.DecisionState{
		{Def: plan.Definition{ID: "d", Run: "x"}, Attempts: []*plan.Attempt{
			{Number: 1, Status: plan.Failed, ResultTree: kept},
			{Number: 2, Status: plan.Reverted, ResultTree: undone},
			{Number: 3, Status: plan.Interrupted},
		}},
	})
	if err := e.plans.Save(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := e.health.roots[1]; !slices.Equal(got, []tree.Hash{a.Root(), b.Root(), kept, undone}) {
		t.Errorf("roots with a plan: %v", got)
	}

	// A second plan run after it does not make the first one's results garbage: a correction
	// with --plan can still archive them.
	other := tree.Sum([]byte("other plan's result"))
	q := plan.Rehydrate("p2", "q", "", true, baseTime.Add(time.Minute), []plan.DecisionState{
		{Def: plan.Definition{ID: "e", Run: "y"}, Attempts: []*plan.Attempt{{Number: 1, Status: plan.Succeeded, ResultTree: other}}},
	})
	if err := e.plans.Save(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := e.health.roots[2]; !slices.Contains(got, kept) || !slices.Contains(got, other) {
		t.Errorf("roots with two plans: %v (want both %s and %s)", got, kept, other)
	}

	boom := errors.New("db down")
	e.plans.currentErr = boom
	if _, err := e.ms.GC(underLock(), port.GCRequest{}); !errors.Is(err, boom) || len(e.health.roots) != 3 {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.currentErr = nil
	e.health.collectErr = boom
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); !errors.Is(err, boom) {
		t.Errorf("collect failing: %v", err)
	}
	e.l.err = fault.Conflict("busy")
	if _, err := e.ms.GC(context.Background(), port.GCRequest{}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
}

func fileE(name string, h tree.Hash) tree.Entry {
	return tree.Entry{Path: name, Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: h}
}

func dirE(name string, h tree.Hash) tree.Entry {
	return tree.Entry{Path: name, Kind: tree.KindDir, Mode: 0o755, Hash: h}
}

func TestVerifyAttributesSharedDamage(t *testing.T) {
	e := newUseCaseEnv(t)
	h := e.health
	shared, own1, own2, bad := tree.Sum([]byte("shared")), tree.Sum([]byte("own1")), tree.Sum([]byte("own2")), tree.Sum([]byte("bad"))
	h.damaged[shared] = fault.Integrity("object %s is damaged", shared)
	// Both checkpoints hold lib/ (the same subtree) whose x.bin is damaged; the second also holds a
	// damaged subtree of its own and a link (never checked: a symlink has no object).
	lib := h.dir(fileE("x.bin", shared), fileE("y.txt", own1))
	h.damaged[bad] = fault.Integrity("tree %s is damaged", bad)
	root1 := h.dir(fileE("a.txt", own1), dirE("lib", lib))
	root2 := h.dir(fileE("a.txt", own2), dirE("broken", bad), dirE("lib", lib),
		tree.Entry{Path: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "a.txt"})
	cp1 := e.checkpointAt(t, baseTime.Add(-2*time.Hour), root1, checkpoint.Stats{})
	cp2 := e.checkpointAt(t, baseTime.Add(-time.Hour), root2, checkpoint.Stats{})

	res, err := e.ms.Verify(context.Background(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range res.Problems {
		got[string(p.CheckpointID)+" "+p.Path] = true
		if !strings.Contains(p.Problem, "damaged") {
			t.Errorf("problem %+v does not say what is wrong", p)
		}
	}
	want := []string{string(cp1.ID()) + " lib/x.bin", string(cp2.ID()) + " lib/x.bin", string(cp2.ID()) + " broken"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no problem for %q in %+v", w, res.Problems)
		}
	}
	if len(res.Problems) != len(want) {
		t.Errorf("problems %+v, want exactly %q", res.Problems, want)
	}
	if res.CheckedCheckpoints != 2 || res.Retried != 0 {
		t.Errorf("result %+v", res)
	}
	// root1, root2, lib, shared, own1, own2, bad: each checked once although lib is in both.
	if res.CheckedObjects != 7 {
		t.Errorf("checked %d objects, want 7", res.CheckedObjects)
	}
	for obj, n := range h.checks {
		if n != 1 {
			t.Errorf("object %s checked %d times, want once", obj, n)
		}
	}
}

func TestVerifyRetriesTransientErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	h := e.health
	flaky, stuck, bad := tree.Sum([]byte("flaky")), tree.Sum([]byte("stuck")), tree.Sum([]byte("bad"))
	h.flaky[flaky] = 1
	h.flaky[stuck] = 2
	h.damaged[bad] = fault.Integrity("object is corrupt")
	root := h.dir(fileE("bad", bad), fileE("flaky", flaky), fileE("stuck", stuck))
	cp := e.checkpointAt(t, baseTime, root, checkpoint.Stats{})

	res, err := e.ms.Verify(context.Background(), string(cp.ID())[:6], true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retried != 1 {
		t.Errorf("retried = %d, want 1 (the flaky object)", res.Retried)
	}
	if h.checks[flaky] != 2 || h.checks[stuck] != 2 || h.checks[bad] != 1 {
		t.Errorf("checks: flaky %d, stuck %d, corrupt %d; want 2, 2, 1 (integrity errors are not retried)",
			h.checks[flaky], h.checks[stuck], h.checks[bad])
	}
	var paths []string
	for _, p := range res.Problems {
		paths = append(paths, p.Path)
		if p.Path == "stuck" && !strings.HasPrefix(p.Problem, "read error (failed twice): ") {
			t.Errorf("stuck object problem %q", p.Problem)
		}
	}
	if !slices.Equal(paths, []string{"bad", "stuck"}) {
		t.Errorf("problems %+v, want bad and stuck", res.Problems)
	}
}

func TestVerifyTreeProblems(t *testing.T) {
	e := newUseCaseEnv(t)
	h := e.health
	badRoot := tree.Sum([]byte("bad root"))
	h.damaged[badRoot] = fault.Integrity("tree missing")
	unlisted := tree.Sum([]byte("unlisted"))
	h.listErr[unlisted] = errors.New("cannot decode")
	nested := h.dir(dirE("deeper", unlisted))
	root := h.dir(dirE("sub", nested))
	cp1 := e.checkpointAt(t, baseTime.Add(-time.Hour), badRoot, checkpoint.Stats{})
	cp2 := e.checkpointAt(t, baseTime, root, checkpoint.Stats{})

	res, err := e.ms.Verify(context.Background(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []VerifyProblem{
		{CheckpointID: cp2.ID(), Path: "sub/deeper", Problem: "cannot decode"},
		{CheckpointID: cp1.ID(), Path: ".", Problem: "tree missing"},
	}
	if !slices.Equal(res.Problems, want) {
		t.Errorf("problems %+v, want %+v", res.Problems, want)
	}

	// Errors that stop verification.
	if _, err := e.ms.Verify(context.Background(), "Z.Z", false); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("malformed ref: %v", err)
	}
	if _, err := e.ms.Verify(context.Background(), "ffffff", false); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown ref: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.ms.Verify(ctx, "", false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestStats(t *testing.T) {
	e := newUseCaseEnv(t)
	day1 := time.Date(2025, 2, 27, 23, 0, 0, 0, time.UTC)
	day2 := time.Date(2025, 2, 28, 1, 0, 0, 0, time.UTC)
	for i := 1; i <= 20; i++ {
		at := day1.Add(time.Duration(i) * time.Minute)
		if i > 5 {
			at = day2.Add(time.Duration(i) * time.Minute)
		}
		e.checkpointAt(t, at, someRoot, checkpoint.Stats{
			Files: 1, Bytes: 1000, StoredBytes: int64(10 * i), Duration: time.Duration(21-i) * time.Millisecond,
		})
	}
	for range 5 {
		e.metrics.failures = append(e.metrics.failures, "disk full")
	}
	e.health.usage = port.StoreUsage{Packs: 3, Objects: 40, StoredBytes: 4000, RawBytes: 9000}
	// What the store wrote each day, decision results and records included, not only the
	// checkpoints' own new objects; a day with writes and no checkpoint is listed too.
	e.health.written = map[string]int64{"2025-02-26": 7, "2025-02-27": 150, "2025-02-28": 10_000_000}

	st, err := e.ms.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints != 20 || st.LogicalBytes != 20000 || st.Store != e.health.usage || st.DedupRatio != 5 {
		t.Errorf("sizes: %+v", st)
	}
	// Durations 1..20 ms: average 10.5 ms, p95 the 19th, max 20 ms.
	if st.AvgCheckpoint != 10500*time.Microsecond || st.P95Checkpoint != 19*time.Millisecond || st.MaxCheckpoint != 20*time.Millisecond {
		t.Errorf("timings: avg %v p95 %v max %v", st.AvgCheckpoint, st.P95Checkpoint, st.MaxCheckpoint)
	}
	if st.CheckpointFailures != 5 || st.SuccessRate != 0.8 {
		t.Errorf("success: %d failures, rate %v; want 5 and 0.8", st.CheckpointFailures, st.SuccessRate)
	}
	// Days in UTC, oldest first.
	want := []DayGrowth{{Day: "2025-02-26", StoredBytes: 7}, {Day: "2025-02-27", Checkpoints: 5, StoredBytes: 150},
		{Day: "2025-02-28", Checkpoints: 15, StoredBytes: 10_000_000}}
	if !slices.Equal(st.GrowthPerDay, want) {
		t.Errorf("growth %+v, want %+v", st.GrowthPerDay, want)
	}
}

func TestStatsEdgeCases(t *testing.T) {
	e := newUseCaseEnv(t)
	st, err := e.ms.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints != 0 || st.SuccessRate != 0 || st.DedupRatio != 0 || st.P95Checkpoint != 0 || len(st.GrowthPerDay) != 0 {
		t.Errorf("empty: %+v", st)
	}
	e.metrics.failures = []string{"x", "y"}
	if st, _ := e.ms.Stats(context.Background()); st.SuccessRate != 0 || st.CheckpointFailures != 2 {
		t.Errorf("only failures: %+v", st)
	}
	e.checkpointAt(t, baseTime, someRoot, checkpoint.Stats{Duration: 7 * time.Millisecond})
	st, err = e.ms.Stats(context.Background())
	if err != nil || st.P95Checkpoint != 7*time.Millisecond || st.MaxCheckpoint != 7*time.Millisecond || st.SuccessRate != 1.0/3 {
		t.Errorf("one checkpoint, two failures: %+v %v", st, err)
	}
	e.metrics.countErr = errors.New("metrics table gone")
	if _, err := e.ms.Stats(context.Background()); !errors.Is(err, e.metrics.countErr) {
		t.Errorf("metrics failing: %v", err)
	}
}

// A checkpoint that fails (not for invalid input) is counted for stats; one refused as invalid is not.
func TestCheckpointFailuresAreCounted(t *testing.T) {
	e := newUseCaseEnv(t)
	e.snap.err = errors.New("disk full")
	if _, err := e.cps.Create(context.Background(), CreateRequest{}); err == nil {
		t.Fatal("create succeeded")
	}
	if _, err := e.cps.Create(context.Background(), CreateRequest{Type: "bogus"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("bogus type: %v", err)
	}
	if len(e.metrics.failures) != 1 || !strings.Contains(e.metrics.failures[0], "disk full") {
		t.Errorf("recorded failures %q", e.metrics.failures)
	}
	st, err := e.ms.Stats(context.Background())
	if err != nil || st.CheckpointFailures != 1 {
		t.Errorf("stats %+v %v", st, err)
	}
}

func TestVerifyReadDataScansTheWholeStore(t *testing.T) {
	e := newUseCaseEnv(t)
	e.checkpointAt(t, baseTime.Add(-time.Hour), e.health.dir(fileE("a.txt", tree.Sum([]byte("a")))), checkpoint.Stats{})
	e.health.scan = []port.ObjectProblem{{Path: "pack p1", Problem: "record at offset 40: content does not match its hash"}}
	res, err := e.ms.Verify(context.Background(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if e.health.scans != 1 || len(res.Problems) != 1 || res.Problems[0].CheckpointID != "" || res.Problems[0].Path != "pack p1" {
		t.Fatalf("store scan problems not reported: %+v (scans %d)", res.Problems, e.health.scans)
	}
	// Without --read-data, or for one checkpoint, the store is not scanned.
	if _, err := e.ms.Verify(context.Background(), "", false); err != nil || e.health.scans != 1 {
		t.Fatalf("verify without read-data scanned the store (%d scans): %v", e.health.scans, err)
	}
	e.health.scanErr = errors.New("eio")
	if _, err := e.ms.Verify(context.Background(), "", true); !errors.Is(err, e.health.scanErr) {
		t.Fatalf("scan error not returned: %v", err)
	}
}

// Records of the workspace's history missing from the store are a verify problem (another
// workspace's gc reads only records), whatever is verified; failing to compare is an error.
func TestVerifyReportsMissingRecords(t *testing.T) {
	e := newUseCaseEnv(t)
	e.checkpointAt(t, baseTime.Add(-time.Hour), e.health.dir(fileE("a.txt", tree.Sum([]byte("a")))), checkpoint.Stats{})
	e.health.missing = []string{"r1", "r2", "r3", "r4"}
	res, err := e.ms.Verify(context.Background(), "", false)
	if err != nil || len(res.Problems) != 1 || res.Problems[0].Path != "records" ||
		!strings.Contains(res.Problems[0].Problem, "4 records") || !strings.Contains(res.Problems[0].Problem, "r1, r2, r3)") {
		t.Fatalf("verify with records missing: %+v, %v", res.Problems, err)
	}
	e.health.missingErr = errors.New("eio")
	if _, err := e.ms.Verify(context.Background(), "", false); !errors.Is(err, e.health.missingErr) {
		t.Fatalf("a failed comparison not returned: %v", err)
	}
}

// Archive pruning keeps the newest finished corrections' archives and every unfinished one's, and
// honours --older-than; a dry run removes nothing.
func TestPruneArchives(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	// Three corrections: two finished (re-executed), the newest reverted only (unfinished).
	for i, req := range []CorrectRequest{{DecisionID: "c", Reason: "one"}, {DecisionID: "c", Reason: "two"}, {DecisionID: "c", Reason: "three", NoReexecute: true}} {
		e.clock.t = e.clock.t.Add(time.Hour)
		if _, err := e.cs.Correct(context.Background(), req); err != nil {
			t.Fatalf("correction %d: %v", i, err)
		}
	}
	cs, _ := e.cs.List(context.Background())
	if len(cs) != 3 || cs[0].Status() != correction.Reverted {
		t.Fatalf("setup: %d corrections, newest %s", len(cs), cs[0].Status())
	}
	res, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 1, DryRun: true})
	if err != nil || len(res.Deleted) != 1 || res.Deleted[0] != cs[2].ID() || len(e.archiver.removed) != 0 {
		t.Fatalf("dry run: %+v, %v, removed %v", res, err, e.archiver.removed)
	}
	if res.Reasons[cs[0].ID()] == "" {
		t.Fatalf("the unfinished correction's archive is kept without a reason: %+v", res)
	}
	if res, err = e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 0, OlderThan: 90 * time.Minute}); err != nil ||
		len(res.Deleted) != 1 || res.Deleted[0] != cs[2].ID() || res.BytesFreed != 100 {
		t.Fatalf("older than 90m: %+v, %v", res, err)
	}
	if _, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: -1}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("negative keep: %v", err)
	}
	e.archiver.removeErr = errors.New("EIO")
	if _, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 0}); err == nil {
		t.Fatal("a failed removal was not reported")
	}
	// The retention policy covers archives too, with or without a checkpoint rule; the unfinished
	// correction's archive is still kept.
	e.archiver.removeErr = nil
	e.settings = fakeSettings{rule: port.RetentionRule{Archives: &port.ArchiveRetention{Keep: 0}}, ok: true}
	rr, ok, err := e.ms.ApplyRetention(context.Background())
	if !ok || err != nil || len(rr.Checkpoints.Deleted) != 0 || !slices.Equal(rr.Archives.Deleted, []string{cs[1].ID()}) {
		t.Fatalf("archive retention: %+v, %v, %v", rr, ok, err)
	}
	// An archive already removed is neither removed nor counted again.
	if again, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 0}); err != nil || len(again.Deleted) != 0 || again.BytesFreed != 0 {
		t.Fatalf("a second prune: %+v, %v", again, err)
	}
	e.archiver.hasErr = errors.New("EIO")
	if _, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 0}); err == nil {
		t.Fatal("an archive that cannot be examined was not reported")
	}
	e.archiver.hasErr = nil
	e.settings.rule.Archives.Keep = -1
	if _, _, err := e.ms.ApplyRetention(context.Background()); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("negative archive keep: %v", err)
	}
}

// A store that does not answer is no verdict on the objects: verify stops with the unavailable
// error (exit 1), reporting nothing as damaged, whether an object's check or a tree's listing
// met it, and checks no further checkpoint.
func TestVerifyStopsWhenTheStoreDoesNotAnswer(t *testing.T) {
	for _, where := range []string{"object", "tree", "denied"} {
		e := newUseCaseEnv(t)
		h := e.health
		f := tree.Sum([]byte("f"))
		down := fault.Unavailable("the store does not answer")
		if where == "denied" {
			down, where = fault.Denied("access denied"), "object"
		}
		subdir := h.dir(fileE("g", tree.Sum([]byte("g"))))
		root := h.dir(fileE("f", f), tree.Entry{Path: "sub", Kind: tree.KindDir, Hash: subdir})
		if where == "object" {
			h.damaged[f] = down
		} else {
			h.listErr[subdir] = down
		}
		other := h.dir(fileE("x", tree.Sum([]byte("x"))))
		e.checkpointAt(t, baseTime, other, checkpoint.Stats{})
		e.checkpointAt(t, baseTime.Add(time.Minute), root, checkpoint.Stats{})
		_, err := e.ms.Verify(context.Background(), "", true)
		if fault.Kind(err) != fault.Kind(down) || !strings.Contains(err.Error(), "nothing was marked damaged") {
			t.Fatalf("%s: verify: %v", where, err)
		}
		if h.scans != 0 {
			t.Errorf("%s: the store was scanned after it stopped answering", where)
		}
	}
}

// gc --aggressive hands the same roots to the store's repack instead of its collection.
func TestGCAggressiveRepacks(t *testing.T) {
	e := newUseCaseEnv(t)
	a := e.checkpointAt(t, baseTime.Add(-time.Hour), tree.Sum([]byte("a")), checkpoint.Stats{})
	r, err := e.ms.GC(context.Background(), port.GCRequest{Aggressive: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.health.repacked != 1 || r.Repack == nil || !slices.Equal(e.health.roots[0], []tree.Hash{a.Root()}) {
		t.Fatalf("gc --aggressive: %+v, repacked %d, roots %v", r, e.health.repacked, e.health.roots)
	}
}
