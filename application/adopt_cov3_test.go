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
