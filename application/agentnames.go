package application

import (
	"context"
	"errors"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ref"
)

// Names scoped by a plan (PLAN/DECISION[^], PLAN#N[^]; read by domain/ref), for agent sessions
// above all, whose plans are not the current one once another session ran.

// resolveScoped finds the checkpoint a scoped name names.
func (o *Operations) resolveScoped(ctx context.Context, n ref.Ref) (*checkpoint.Checkpoint, error) {
	name := n.Text
	var ids []string
	if n.Decision != "" {
		ids = []string{n.Decision}
	}
	p, err := o.plans.Partial(ctx, n.Plan, ids)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fault.NotFound("%s: no plan %q in this workspace (`plan plans` lists them)", name, n.Plan)
	}
	if err != nil {
		return nil, err
	}
	if n.Decision == "" {
		t, err := p.Turn(n.Turn)
		if err != nil {
			return nil, err
		}
		id := t.Start
		if !n.Caret {
			if id = t.End; id == "" {
				return nil, fault.NotFound("%s: turn %d of %s has not ended (%s^ is its start)", name, n.Turn, n.Plan, name)
			}
		}
		return o.checkpoints.Get(ctx, id)
	}
	d, err := p.Decision(n.Decision)
	if err != nil {
		return nil, fault.NotFound("%s: plan %q has no decision %q", name, n.Plan, n.Decision)
	}
	a, ran := d.Latest()
	switch {
	case !ran:
		return nil, fault.NotFound("%s: decision %q of plan %q has not run", name, n.Decision, n.Plan)
	case n.Caret && a.CheckpointID == "":
		return nil, fault.NotFound("%s: attempt %d of decision %q ran without a checkpoint before it", name, a.Number, n.Decision)
	case n.Caret:
		return o.checkpoints.Get(ctx, a.CheckpointID)
	}
	return o.afterDecision(ctx, attemptRef{decision: n.Decision, number: a.Number, checkpoint: a.CheckpointID, result: a.ResultTree, started: a.StartedAt})
}
