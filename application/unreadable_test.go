package application

import (
	"context"
	"slices"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
)

// readableSnap is the fake snapshotter that also names the live paths it could not read.
type readableSnap struct {
	*fakeSnap
	unreadable []string
}

func (s readableSnap) ScanReadable(ctx context.Context, p port.Progress) ([]tree.Entry, []string, error) {
	live, err := s.Scan(ctx, p)
	return live, s.unreadable, err
}

func (s readableSnap) Snapshot(ctx context.Context, p port.Progress, also ...tree.Hash) (port.Snapshot, error) {
	snap, err := s.fakeSnap.Snapshot(ctx, p, also...)
	snap.Unreadable = s.unreadable
	return snap, err
}

// What the walk could not read is named by Pending and left out of its changes (a checkpoint
// would not record it, a rollback not touch it); checkpoint create hands it to Unreadable.
func TestPendingAndCreateNameUnreadablePaths(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	e.setFile("a.txt", "a")
	e.setFile("pgdata/x", "x")
	if _, err := e.cps.Create(ctx, CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	e.snap.live = slices.DeleteFunc(e.snap.live, func(x tree.Entry) bool { return x.Path == "pgdata/x" })
	e.setFile("b.txt", "b")
	rs := readableSnap{fakeSnap: e.snap, unreadable: []string{"pgdata"}}
	e.ops.snap = rs
	e.rewire()
	p, err := NewReadService(e.ops, nil).Pending(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Unreadable, []string{"pgdata"}) || len(p.Changes) != 1 || p.Changes[0].Path != "b.txt" {
		t.Fatalf("pending: unreadable %q, changes %+v; want [pgdata], b.txt added only", p.Unreadable, p.Changes)
	}
	var got []string
	if _, err := e.cps.Create(ctx, CreateRequest{Unreadable: func(paths []string) { got = paths }}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"pgdata"}) {
		t.Fatalf("Create handed %q to Unreadable", got)
	}
	// With nothing unreadable, nothing is named and every change counts.
	rs.unreadable = nil
	e.ops.snap = rs
	if p, err = NewReadService(e.ops, nil).Pending(ctx, nil); err != nil || p.Unreadable != nil {
		t.Fatalf("pending: %+v %v", p, err)
	}
}
