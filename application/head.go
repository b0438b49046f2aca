package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// The head is where the workspace stands: the checkpoint its files were last made equal to or
// recorded as. `@` names it, `@~N` walks its parents, and status and diff without a ref compare
// with it. It is worked out from what the database already records (checkpoint.Derive): the newest
// checkpoint unless that is a safety checkpoint, and then the target of the rollback that took it.
// The history row that names the rollback is written by the rollback's finisher, inside its
// journaled change, so a rollback a crash interrupted leaves the head where it was until `plan
// recover` finishes it; and a rebuild from the store's records gives the same head.

// head returns the workspace's head, nil when it has none (no checkpoint, or only safety ones).
func (o *Operations) head(ctx context.Context) (*checkpoint.Checkpoint, error) {
	latest, err := o.checkpoints.Latest(ctx)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case !latest.IsSafety():
		// The common case costs one row: `@` is what `cat @ FILE` and `ls @ DIR` name.
		return latest, nil
	}
	all, err := o.checkpoints.ListSince(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	records, err := o.history.List(ctx)
	if err != nil {
		return nil, err
	}
	targets := make(map[checkpoint.ID]checkpoint.ID, len(records))
	for _, r := range records {
		if r.BackupCheckpoint != "" {
			targets[r.BackupCheckpoint] = r.TargetCheckpoint
		}
	}
	l := checkpoint.Derive(all, func(b checkpoint.ID) (checkpoint.ID, bool) {
		t, ok := targets[b]
		return t, ok
	})
	for _, c := range all {
		if c.ID() == l.Head {
			return c, nil
		}
	}
	return nil, nil
}

// Head returns the workspace's head (nil when it has none).
func (s *CheckpointService) Head(ctx context.Context) (*checkpoint.Checkpoint, error) {
	return s.ops.head(ctx)
}

// back walks n parents from the head (@~N). A parent recorded before heads were (the newest
// checkpoint then, possibly a safety one) is passed over to its own parent: safety checkpoints are
// never on the head's line.
func (o *Operations) back(ctx context.Context, n int, name string) (*checkpoint.Checkpoint, error) {
	c, err := o.head(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fault.NotFound("%s: the workspace has no checkpoint yet", name)
	}
	for i := 0; i < n; {
		p := c.ParentID()
		if p == "" {
			return nil, fault.NotFound("%s: the history of the head ends %s back, at %s", name, parents(i), c.ID())
		}
		next, err := o.checkpoints.Get(ctx, p)
		if errors.Is(err, fault.ErrNotFound) {
			return nil, fault.NotFound("%s: the history of the head ends %s back: the parent of %s, %s, was deleted", name, parents(i), c.ID(), p)
		}
		if err != nil {
			return nil, err
		}
		c = next
		if !c.IsSafety() {
			i++
		}
	}
	return c, nil
}

// parents is "1 parent" or "N parents".
func parents(n int) string {
	if n == 1 {
		return "1 parent"
	}
	return fmt.Sprintf("%d parents", n)
}
