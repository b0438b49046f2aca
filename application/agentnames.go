package application

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

// Names scoped by a plan, beside those of names.go, for agent sessions above all (whose plans are
// not the current one once another session ran):
//   - `PLAN/DECISION^` and `PLAN/DECISION`: DECISION^ and DECISION of plan PLAN (a tool call
//     of a session: `claude-SESSION/toolu_01…^` is the state before it);
//   - `PLAN#N^`: turn N of plan PLAN as it started (its turn_start checkpoint), and `PLAN#N` as
//     it ended (its turn_end checkpoint).
//
// The plan is named in full, and only a plan whose name is letters, digits, '.', '_', ':' and '-'
// (as every agent session's is) can be named so.

// scopedName is a name of the forms above: ok is false for any other name.
type scopedName struct {
	plan     string
	decision string // "" for a turn
	turn     int
	before   bool // the ^ form
}

var scopedPlan = ident.NewPattern("A-Za-z0-9", "A-Za-z0-9._:-", 200) // ^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$

func parseScoped(ref string) (scopedName, bool) {
	base, before := strings.CutSuffix(ref, "^")
	if i := strings.LastIndexByte(base, '#'); i > 0 && scopedPlan.Match(base[:i]) {
		n, err := strconv.Atoi(base[i+1:])
		if err != nil || n < 1 || base[i+1:] != strconv.Itoa(n) {
			return scopedName{}, false
		}
		return scopedName{plan: base[:i], turn: n, before: before}, true
	}
	if i := strings.LastIndexByte(base, '/'); i > 0 && scopedPlan.Match(base[:i]) && plan.ValidateDecisionID(base[i+1:]) == nil {
		return scopedName{plan: base[:i], decision: base[i+1:], before: before}, true
	}
	return scopedName{}, false
}

func isScoped(ref string) bool {
	_, ok := parseScoped(ref)
	return ok
}

// resolveScoped finds the checkpoint a scoped name names.
func (o *Operations) resolveScoped(ctx context.Context, n scopedName, ref string) (*checkpoint.Checkpoint, error) {
	var ids []string
	if n.decision != "" {
		ids = []string{n.decision}
	}
	p, err := o.plans.Partial(ctx, n.plan, ids)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fault.NotFound("%s: no plan %q in this workspace (`plan plans` lists them)", ref, n.plan)
	}
	if err != nil {
		return nil, err
	}
	if n.decision == "" {
		t, err := p.Turn(n.turn)
		if err != nil {
			return nil, err
		}
		id := t.Start
		if !n.before {
			if id = t.End; id == "" {
				return nil, fault.NotFound("%s: turn %d of %s has not ended (%s^ is its start)", ref, n.turn, n.plan, ref)
			}
		}
		return o.checkpoints.Get(ctx, id)
	}
	d, err := p.Decision(n.decision)
	if err != nil {
		return nil, fault.NotFound("%s: plan %q has no decision %q", ref, n.plan, n.decision)
	}
	a, ran := d.Latest()
	switch {
	case !ran:
		return nil, fault.NotFound("%s: decision %q of plan %q has not run", ref, n.decision, n.plan)
	case n.before && a.CheckpointID == "":
		return nil, fault.NotFound("%s: attempt %d of decision %q ran without a checkpoint before it", ref, a.Number, n.decision)
	case n.before:
		return o.checkpoints.Get(ctx, a.CheckpointID)
	}
	return o.afterDecision(ctx, attemptRef{decision: n.decision, number: a.Number, checkpoint: a.CheckpointID, result: a.ResultTree, started: a.StartedAt})
}
