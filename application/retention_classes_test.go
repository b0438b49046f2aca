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
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// typedCheckpoint adds a checkpoint of type typ created age before the clock's now, with labels.
func (e *useCaseEnv) typedCheckpoint(t *testing.T, age time.Duration, typ checkpoint.Type, labels map[string]string, pinned bool) *checkpoint.Checkpoint {
	t.Helper()
	at := e.clock.t.Add(-age)
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(at), Type: typ, CreatedAt: at, Root: e.store.put(nil), Labels: labels, Pinned: pinned,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.repo.Add(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// classEnv holds, newest first: a manual checkpoint, a young pre_decision one, an old pre_decision
// one, an old release-labelled one, an old pinned pre_decision one and an old manual one.
type classEnv struct {
	*useCaseEnv
	manual, youngPre, oldPre, release, pinnedPre, oldManual *checkpoint.Checkpoint
}

func newClassEnv(t *testing.T) classEnv {
	e := classEnv{useCaseEnv: newUseCaseEnv(t)}
	e.oldManual = e.typedCheckpoint(t, 96*time.Hour, checkpoint.Manual, nil, false)
	e.pinnedPre = e.typedCheckpoint(t, 80*time.Hour, checkpoint.PreDecision, nil, true)
	e.release = e.typedCheckpoint(t, 72*time.Hour, checkpoint.Manual, map[string]string{"release": "v1", "team": "x"}, false)
	e.oldPre = e.typedCheckpoint(t, 48*time.Hour, checkpoint.PreDecision, nil, false)
	e.youngPre = e.typedCheckpoint(t, 30*time.Minute, checkpoint.PreDecision, nil, false)
	e.manual = e.typedCheckpoint(t, 10*time.Minute, checkpoint.Manual, nil, false)
	return e
}

var testClasses = []port.RetentionClass{
	{Labels: map[string]string{"release": "v1"}, Forever: true},
	{Type: checkpoint.PreDecision, OlderThan: time.Hour},
}

func TestPruneClassesDecideBeforeKeep(t *testing.T) {
	e := newClassEnv(t)
	// Keep 1 among the checkpoints no class matches: manual stays, oldManual goes.
	res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 1, Classes: testClasses})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Deleted)
	want := []checkpoint.ID{e.oldManual.ID(), e.oldPre.ID()}
	slices.Sort(want)
	if !slices.Equal(res.Deleted, want) {
		t.Errorf("deleted %v, want the old manual and the old pre_decision checkpoints", res.Deleted)
	}
	for cp, why := range map[*checkpoint.Checkpoint]string{
		e.release:   "retention class label release=v1: kept forever",
		e.youngPre:  "retention class type pre_decision: younger than 1h0m0s",
		e.pinnedPre: "pinned",
	} {
		if !strings.HasPrefix(res.Reasons[cp.ID()], why) {
			t.Errorf("%s kept for %q, want %q", cp.Type(), res.Reasons[cp.ID()], why)
		}
	}
	// The class-kept checkpoints do not use up Keep: the newest unmatched one is still kept.
	if _, err := e.repo.Get(context.Background(), e.manual.ID()); err != nil || res.Reasons[e.manual.ID()] != "" {
		t.Errorf("the newest unclassed checkpoint: %v (%q)", err, res.Reasons[e.manual.ID()])
	}
	if len(e.repo.cps) != 4 {
		t.Errorf("%d checkpoints left, want 4", len(e.repo.cps))
	}
}

func TestRetentionClassMatchesAndNames(t *testing.T) {
	e := newClassEnv(t)
	for _, c := range []struct {
		class port.RetentionClass
		cp    *checkpoint.Checkpoint
		want  bool
	}{
		{port.RetentionClass{}, e.manual, true},
		{port.RetentionClass{Type: checkpoint.PreDecision}, e.youngPre, true},
		{port.RetentionClass{Type: checkpoint.PreDecision}, e.manual, false},
		{port.RetentionClass{Labels: map[string]string{"release": "v1"}}, e.release, true},
		{port.RetentionClass{Labels: map[string]string{"release": "v2"}}, e.release, false},
		{port.RetentionClass{Labels: map[string]string{"release": "v1", "team": "y"}}, e.release, false},
		{port.RetentionClass{Type: checkpoint.PreDecision, Labels: map[string]string{"release": "v1"}}, e.release, false},
	} {
		if got := c.class.Matches(c.cp); got != c.want {
			t.Errorf("%s matches %s %v: %v, want %v", c.class, c.cp.Type(), c.cp.Labels(), got, c.want)
		}
	}
	for _, c := range []struct {
		class port.RetentionClass
		want  string
	}{
		{port.RetentionClass{}, "every checkpoint"},
		{port.RetentionClass{Type: checkpoint.Manual, Labels: map[string]string{"z": "1", "a": "2"}}, "type manual, label a=2, label z=1"},
	} {
		if got := c.class.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestPruneByPolicy(t *testing.T) {
	e := newClassEnv(t)
	if _, err := e.ms.PruneByPolicy(context.Background(), false); !errors.Is(err, fault.ErrInvalid) ||
		!strings.Contains(err.Error(), "no checkpoint retention policy") {
		t.Errorf("no policy: %v", err)
	}
	// A policy for archives alone is no checkpoint policy.
	e.settings = fakeSettings{rule: port.RetentionRule{Archives: &port.ArchiveRetention{Keep: 1}}, ok: true}
	if _, err := e.ms.PruneByPolicy(context.Background(), false); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("archives-only policy: %v", err)
	}
	e.settings = fakeSettings{err: errors.New("bad yaml")}
	if _, err := e.ms.PruneByPolicy(context.Background(), false); !errors.Is(err, e.settings.err) {
		t.Errorf("unreadable settings: %v", err)
	}

	// Classes alone: what no class matches is kept, however many there are.
	e.settings = fakeSettings{rule: port.RetentionRule{Classes: testClasses}, ok: true}
	res, err := e.ms.PruneByPolicy(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []checkpoint.ID{e.oldPre.ID()}) || len(e.repo.cps) != 6 {
		t.Errorf("dry, classes alone: deleted %v (%d left), want the old pre_decision only, nothing removed", res.Deleted, len(e.repo.cps))
	}
	if _, err := e.ms.PruneByPolicy(context.Background(), false); err != nil || len(e.repo.cps) != 5 {
		t.Errorf("classes alone: %v, %d left", err, len(e.repo.cps))
	}

	// With keep and older_than for the rest.
	e.settings = fakeSettings{rule: port.RetentionRule{Keep: 1, OlderThan: 90 * time.Hour, Classes: testClasses}, ok: true}
	res, err = e.ms.PruneByPolicy(context.Background(), false)
	if err != nil || !slices.Equal(res.Deleted, []checkpoint.ID{e.oldManual.ID()}) {
		t.Errorf("keep 1 older than 90h: deleted %v, %v", res.Deleted, err)
	}
}

// After a run the same policy applies, classes included.
func TestApplyRetentionUsesTheClasses(t *testing.T) {
	e := newClassEnv(t)
	e.settings = fakeSettings{rule: port.RetentionRule{Classes: testClasses}, ok: true}
	res, ok, err := e.ms.ApplyRetention(context.Background())
	if err != nil || !ok || !slices.Equal(res.Checkpoints.Deleted, []checkpoint.ID{e.oldPre.ID()}) {
		t.Errorf("deleted %v, ok %v, %v", res.Checkpoints.Deleted, ok, err)
	}
}

func TestSetPinned(t *testing.T) {
	e := newClassEnv(t)
	ref := string(e.oldManual.ID())
	cp, err := e.cps.SetPinned(context.Background(), ref[:20], true)
	if err != nil || !cp.Pinned() {
		t.Fatalf("pin: %v, %v", cp, err)
	}
	if stored, _ := e.repo.Get(context.Background(), e.oldManual.ID()); !stored.Pinned() {
		t.Error("the pin was not stored")
	}
	if e.l.held || e.l.purposes[len(e.l.purposes)-1] != "checkpoint pin" {
		t.Errorf("lock: %v %q", e.l.held, e.l.purposes)
	}
	// Pinned, it survives a prune that keeps nothing.
	if res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 0}); err != nil || slices.Contains(res.Deleted, e.oldManual.ID()) {
		t.Errorf("a pinned checkpoint was pruned: %+v, %v", res, err)
	}
	if cp, err := e.cps.SetPinned(context.Background(), ref, false); err != nil || cp.Pinned() {
		t.Errorf("unpin: %v, %v", cp, err)
	}
	if res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 0}); err != nil || !slices.Contains(res.Deleted, e.oldManual.ID()) {
		t.Errorf("an unpinned checkpoint was kept: %+v, %v", res, err)
	}

	locks := e.l.locks
	if _, err := e.cps.SetPinned(context.Background(), "../x", true); !errors.Is(err, fault.ErrInvalid) || e.l.locks != locks {
		t.Errorf("bad ref: %v (locks %d → %d)", err, locks, e.l.locks)
	}
	if _, err := e.cps.SetPinned(context.Background(), "ffffffff", true); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown checkpoint: %v", err)
	}
	e.repo.updateErr = errors.New("db down")
	if _, err := e.cps.SetPinned(context.Background(), string(e.pinnedPre.ID()), false); !errors.Is(err, e.repo.updateErr) {
		t.Errorf("update failing: %v", err)
	}
	e.l.err = fault.Conflict("busy")
	if _, err := e.cps.SetPinned(context.Background(), string(e.pinnedPre.ID()), false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("lock busy: %v", err)
	}
}
