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

// A decision a correction gave a new command (plan correct --run, plan revert --run) is defined by
// that command until the plan file changes the decision's command (plan.Plan.Define): a file that
// still gives the command it gave when the correction was made has not changed the decision. When
// the file does change it, the file's command supersedes the correction, and the warning (and the
// re-run) says which correction it supersedes.

// ChangedDecision is a succeeded decision whose definition in the plan file differs from the one
// it ran with.
type ChangedDecision struct {
	ID string
	// Fields names what changed: command, env, validate.
	Fields []string
	// Supersedes is the correction whose command the file's new command replaces ("" when the
	// decision's command was the file's own).
	Supersedes string
}

// fileCommand is the command def (the plan file's) gives decision d: the corrected one while the
// file says what it said when the correction was made.
func fileCommand(d *plan.Decision, def plan.Definition) string {
	if _, fileRun, ok := d.Corrected(); ok && def.Run == fileRun {
		return d.Definition().Run
	}
	return def.Run
}

// superseded returns the correction whose command def's command supersedes ("" when none does).
func superseded(d *plan.Decision, def plan.Definition) string {
	if by, _, ok := d.Corrected(); ok && fileCommand(d, def) != d.Definition().Run {
		return by
	}
	return ""
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
		if run := fileCommand(d, def); run != old.Run || (a.Command != "" && run != a.Command) {
			fields = append(fields, "command")
		}
		if !maps.Equal(def.Env, old.Env) {
			fields = append(fields, "env")
		}
		if def.Validate != old.Validate {
			fields = append(fields, "validate")
		}
		if len(fields) > 0 {
			out = append(out, ChangedDecision{ID: def.ID, Fields: fields, Supersedes: superseded(d, def)})
		}
	}
	return out
}

// supersededWarnings are the warnings for the decisions in defs that will run again (they have not
// succeeded) with the plan file's command where a correction had given them another: the run
// says so before it runs the file's command instead of the correction's.
func supersededWarnings(p *plan.Plan, defs []plan.Definition) []string {
	var out []string
	for _, def := range defs {
		d, err := p.Decision(def.ID)
		if err != nil || d.Status() == plan.Succeeded {
			continue
		}
		if by := superseded(d, def); by != "" {
			out = append(out, fmt.Sprintf("decision %s: the plan file changed its command since correction %s replaced it; "+
				"the file's command supersedes the correction's (%s) and runs instead", def.ID, by, d.Definition().Run))
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
			if _, fileRun, ok := d.Corrected(); ok && out[i].Run == old.Run {
				// The command the file gave when the correction was made keeps the correction
				// standing (Define), so the next run names it again.
				out[i].Run = fileRun
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
		if c.Supersedes != "" {
			parts[i] = fmt.Sprintf("%s (%s; the file's command supersedes correction %s)", c.ID, strings.Join(c.Fields, ", "), c.Supersedes)
		}
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
