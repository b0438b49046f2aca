package application

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// A plan file edited after some of its decisions succeeded: resuming would skip them, and the
// workspace would hold what their old definitions made. `plan run` reports such decisions, and
// keeps the definition each ran with until it is re-executed, so every run reports them again
// (and `plan status` shows what produced the state). With RerunChanged, the run first rolls the
// workspace and the decision states back to the pre_decision checkpoint of the first changed
// decision (a journaled rollback with its own safety checkpoint, which `plan undo` takes back);
// that reverts it and every decision started after it, and the run re-executes them all with the
// file's definitions.

// ChangedDecision is a succeeded decision whose definition in the plan file differs from the one
// it ran with.
type ChangedDecision struct {
	ID string
	// Fields names what changed: command, env, validate.
	Fields []string
}

// changedDecisions lists, in the file's order, the succeeded decisions of p whose command, env or
// validate in defs differs from what they ran with (their stored definition, and the command their
// latest attempt recorded).
func changedDecisions(p *plan.Plan, defs []plan.Definition) []ChangedDecision {
	var out []ChangedDecision
	for _, def := range defs {
		d, err := p.Decision(def.ID)
		if err != nil || d.Status() != plan.Succeeded {
			continue
		}
		old := d.Definition()
		a, _ := d.Latest()
		var fields []string
		if def.Run != old.Run || (a.Command != "" && def.Run != a.Command) {
			fields = append(fields, "command")
		}
		if !maps.Equal(def.Env, old.Env) {
			fields = append(fields, "env")
		}
		if def.Validate != old.Validate {
			fields = append(fields, "validate")
		}
		if len(fields) > 0 {
			out = append(out, ChangedDecision{ID: def.ID, Fields: fields})
		}
	}
	return out
}

// keepRan returns defs with the changed decisions' command, env and validate as they ran.
func keepRan(p *plan.Plan, defs []plan.Definition, changed []ChangedDecision) []plan.Definition {
	out := make([]plan.Definition, len(defs))
	copy(out, defs)
	for i, def := range out {
		for _, c := range changed {
			if c.ID != def.ID {
				continue
			}
			d, _ := p.Decision(def.ID) // changedDecisions found it
			old := d.Definition()
			a, _ := d.Latest()
			out[i].Run, out[i].Env, out[i].Validate = old.Run, old.Env, old.Validate
			if a.Command != "" {
				out[i].Run = a.Command
			}
		}
	}
	return out
}

// changedWarning is the warning a run without RerunChanged gives.
func changedWarning(changed []ChangedDecision) string {
	parts := make([]string, len(changed))
	for i, c := range changed {
		parts[i] = fmt.Sprintf("%s (%s)", c.ID, strings.Join(c.Fields, ", "))
	}
	return fmt.Sprintf("the plan file changed decisions that already succeeded: %s; they keep the results of their old definitions (skipped); "+
		"plan run --rerun-changed re-executes from %s", strings.Join(parts, ", "), changed[0].ID)
}

// rerunFrom rolls the workspace and the decision states back to the pre_decision checkpoint of
// decision id's latest attempt, so the run re-executes it and every decision after it. The caller
// holds the guard.
func (s *PlanService) rerunFrom(ctx context.Context, p *plan.Plan, id string, req RunRequest) (RollbackResult, error) {
	d, _ := p.Decision(id) // one of changedDecisions', which found it in p
	a, _ := d.Latest()
	if a.CheckpointID == "" {
		return RollbackResult{}, fault.Conflict("cannot re-run %q from its pre_decision checkpoint: it ran without one (--no-checkpoints); nothing was changed", id)
	}
	target, err := s.checkpoints.Get(ctx, a.CheckpointID)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("the pre_decision checkpoint of %q: %w", id, err)
	}
	rb, err := s.ops.restore(ctx, restoreSpec{target: target, keep: req.Keep, req: RollbackRequest{Mode: RestoreBoth, Warn: req.Warn}})
	if err != nil {
		return rb, fmt.Errorf("restore %q's pre_decision checkpoint to re-run it: %w", id, err)
	}
	rb.Mode = RestoreBoth
	return rb, nil
}
