package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// A clone's first checkpoint is another workspace's tree, adopted as is: a checkpoint of type
// clone with the tree's counts, the live workspace untouched, and a rollback to it restores it.
func TestAdoptRecordsATreeAsACloneCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	w := withTrees(e)
	root := e.store.put([]tree.Entry{fileE("a.txt", tree.Sum([]byte("a"))), fileE("b.txt", tree.Sum([]byte("bb")))})
	before, snaps := len(e.snap.live), e.snap.snaps
	cp, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root, Note: "cloned from w/c"})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Type() != checkpoint.Clone || cp.Root() != root || cp.Note() != "cloned from w/c" || cp.Stats().Files != 2 {
		t.Fatalf("adopted checkpoint: %s %s %q %+v", cp.Type(), cp.Root(), cp.Note(), cp.Stats())
	}
	if got, err := e.repo.Get(context.Background(), cp.ID()); err != nil || got.Root() != root {
		t.Fatalf("the checkpoint was not recorded: %v", err)
	}
	if len(e.snap.live) != before || e.snap.snaps != snaps || len(e.r.applies) != 0 {
		t.Fatal("adopting a tree touched the live workspace")
	}
	if w.calls != 1 {
		t.Fatalf("the tree was checked %d times", w.calls)
	}
	// Its parent is the workspace's newest checkpoint before it.
	next, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root})
	if err != nil || next.ParentID() != cp.ID() {
		t.Fatalf("second adoption: parent %q, %v", next.ParentID(), err)
	}
}

// A tree the store does not hold whole is refused, nothing is recorded; a busy workspace is a
// conflict; a graph without a TreeWriter says so.
func TestAdoptRefusals(t *testing.T) {
	e := newUseCaseEnv(t)
	w := withTrees(e)
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: tree.Sum([]byte("nothing"))}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("missing tree: %v", err)
	}
	if cps, _ := e.repo.List(context.Background()); len(cps) != 0 {
		t.Fatal("a refused adoption recorded a checkpoint")
	}
	w.err = fault.Integrity("object x is damaged")
	root := e.store.put([]tree.Entry{fileE("a.txt", tree.Sum([]byte("a")))})
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("damaged tree: %v", err)
	}
	w.err = nil
	e.l.err = fault.Conflict("busy")
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("busy: %v", err)
	}
	e.l.err = nil
	e.ops.trees = nil
	e.rewire()
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root}); err == nil {
		t.Fatal("adopted without a TreeWriter")
	}
}

// An adoption whose history cannot be read (the newest checkpoint, its parent) or whose checkpoint
// cannot be recorded fails with that error as is, and records nothing: a clone never starts with a
// checkpoint of unknown parentage. An overlong note is refused the same way.
func TestAdoptFailsWhenTheHistoryFails(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	root := e.store.put([]tree.Entry{fileE("a.txt", tree.Sum([]byte("a")))})
	e.repo.latestErr = fault.Integrity("database disk image is malformed")
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root}); !errors.Is(err, fault.ErrIntegrity) ||
		!strings.Contains(err.Error(), "malformed") {
		t.Fatalf("unreadable newest checkpoint: %v", err)
	}
	e.repo.latestErr = nil
	e.repo.addErr = fault.Unavailable("database server gone")
	_, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root})
	if !errors.Is(err, fault.ErrUnavailable) || !strings.HasPrefix(err.Error(), "record checkpoint: ") {
		t.Fatalf("unrecordable checkpoint: %v", err)
	}
	e.repo.addErr = nil
	// A note longer than a checkpoint holds is refused as invalid input, like `checkpoint create`'s.
	if _, err := e.cps.Adopt(context.Background(), AdoptRequest{Root: root, Note: strings.Repeat("n", checkpoint.MaxNoteLength+1)}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("overlong note: %v", err)
	}
	if cps, _ := e.repo.List(context.Background()); len(cps) != 0 {
		t.Fatalf("a failed adoption recorded %d checkpoint(s)", len(cps))
	}
}
