package plan

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// Kind says who runs a decision.
type Kind string

// The kinds of decision.
const (
	// Executed is a decision plan runs: its command, under the workspace lock, as `plan run`,
	// `plan exec` or a correction's re-execution start it.
	Executed Kind = ""
	// Outside is a decision that ran outside plan (an AI coding agent's tool call, reported by its
	// hooks): plan recorded the workspace before it and what it changed after it, but never ran
	// it and cannot run it again. Its Run is a short description of the call, not a command.
	Outside Kind = "outside"
)

// errPartial refuses a change of the whole list on a plan loaded with only some of its decisions.
var errPartial = fault.Conflict("this plan was loaded with only some of its decisions: its list of decisions cannot be redefined")

// errOutside refuses to run (or rewrite) a decision recorded from outside.
func errOutside(id string) error {
	return fault.Conflict("decision %q is a tool call an agent ran (recorded from outside): plan cannot run it again; "+
		"undo it with `plan revert --decision %s` or `plan rewind`", id, id)
}

// maxOutsideRun bounds the description an Outside decision keeps of its call.
const maxOutsideRun = 512

func (d Definition) validateOutside() error {
	if err := ValidateDecisionID(d.ID); err != nil {
		return err
	}
	if err := checkpoint.ValidateLabels(d.Labels); err != nil {
		return fault.Invalid("decision %q: %s", d.ID, err.Error())
	}
	if strings.TrimSpace(d.Run) == "" {
		return fault.Invalid("decision %q has no description of the call it records", d.ID)
	}
	if len(d.Run) > maxOutsideRun {
		return fault.Invalid("decision %q: the description of its call is %d bytes; at most %d", d.ID, len(d.Run), maxOutsideRun)
	}
	if d.Retries != 0 || d.OnFailure != "" || d.Validate != "" || d.Timeout != 0 || len(d.Env) > 0 {
		return fault.Invalid("decision %q is recorded from outside: it has no retries, failure policy, validation, timeout or environment", d.ID)
	}
	return nil
}

// Kind returns who runs the decision.
func (d *Decision) Kind() Kind { return d.def.Kind }

// RecordOutside records the start of a call that runs outside plan as decision def.ID (kind
// Outside), with checkpointID the state before it. Recording the same call again while it runs
// returns its running attempt unchanged (a hook delivered twice); a call that already finished is
// a conflict. Several Outside decisions may be running at once, and beside an Executed one.
func (p *Plan) RecordOutside(def Definition, checkpointID checkpoint.ID, now time.Time) (Attempt, error) {
	def.Kind = Outside
	if err := def.validateOutside(); err != nil {
		return Attempt{}, err
	}
	if d, err := p.Decision(def.ID); err == nil {
		a := d.latest()
		switch {
		case d.def.Kind != Outside:
			return Attempt{}, fault.Conflict("decision %q of plan %q is one plan runs, not a tool call", def.ID, p.name)
		case a != nil && a.Status == Running:
			return a.clone(), nil
		}
		return Attempt{}, fault.Conflict("tool call %q is already recorded (%s)", def.ID, d.Status())
	}
	a := &Attempt{Number: 1, Status: Running, Command: def.Run, CheckpointID: checkpointID, StartedAt: now.UTC()}
	p.decisions = append(p.decisions, &Decision{def: def, attempts: []*Attempt{a}})
	p.mark(def.ID)
	return a.clone(), nil
}

// FinishOutside records how an Outside decision's call ended. Finishing one that already finished
// is a conflict; so is finishing a decision plan runs.
func (p *Plan) FinishOutside(id string, o Outcome, now time.Time) error {
	d, err := p.Decision(id)
	if err != nil {
		return err
	}
	if d.def.Kind != Outside {
		return fault.Conflict("decision %q of plan %q is one plan runs, not a tool call", id, p.name)
	}
	a := d.latest()
	if a == nil || a.Status != Running {
		return fault.Conflict("tool call %q is not running (%s)", id, d.Status())
	}
	switch o.Status {
	case Succeeded, Failed, Interrupted:
	default:
		return fault.Invalid("an attempt cannot finish as %s", o.Status)
	}
	a.Status, a.ExitCode, a.ResultTree, a.Artifacts, a.FinishedAt = o.Status, o.ExitCode, o.ResultTree, slices.Clone(o.Artifacts), now.UTC()
	p.mark(id)
	return nil
}

// RunningOutside lists the Outside decisions whose call has not reported its end, in plan order.
func (p *Plan) RunningOutside() []*Decision {
	var out []*Decision
	for _, d := range p.decisions {
		if d.def.Kind == Outside && d.Status() == Running {
			out = append(out, d)
		}
	}
	return out
}

// Turn is one user prompt of an agent session and what followed it: the checkpoint of the
// workspace when the prompt came (Start) and, once the agent stopped, the one it was left in (End).
type Turn struct {
	Number    int
	Prompt    string // a short excerpt of the prompt
	Start     checkpoint.ID
	End       checkpoint.ID // "" while the turn goes on
	StartedAt time.Time
	EndedAt   time.Time // zero while the turn goes on
}

// MaxPromptExcerpt bounds what a turn keeps of its prompt.
const MaxPromptExcerpt = 200

// Turns returns the plan's turns, oldest first.
func (p *Plan) Turns() []Turn { return slices.Clone(p.turns) }

// CurrentTurn returns the latest turn, false when there is none.
func (p *Plan) CurrentTurn() (Turn, bool) {
	if len(p.turns) == 0 {
		return Turn{}, false
	}
	return p.turns[len(p.turns)-1], true
}

// Turn returns turn number n.
func (p *Plan) Turn(n int) (Turn, error) {
	if n < 1 || n > len(p.turns) {
		return Turn{}, fault.NotFound("plan %q has %d turns, not a turn %d", p.name, len(p.turns), n)
	}
	return p.turns[n-1], nil
}

// OpenTurn starts the next turn from checkpoint start; an open turn is closed first, at the same
// checkpoint (its agent never reported that it stopped).
func (p *Plan) OpenTurn(prompt string, start checkpoint.ID, now time.Time) Turn {
	if t, ok := p.CurrentTurn(); ok && t.End == "" {
		p.CloseTurn(start, now)
	}
	t := Turn{Number: len(p.turns) + 1, Prompt: excerpt(prompt, MaxPromptExcerpt), Start: start, StartedAt: now.UTC()}
	p.turns = append(p.turns, t)
	return t
}

// CloseTurn ends the open turn at checkpoint end; it returns false when no turn is open.
func (p *Plan) CloseTurn(end checkpoint.ID, now time.Time) bool {
	if len(p.turns) == 0 || p.turns[len(p.turns)-1].End != "" {
		return false
	}
	t := &p.turns[len(p.turns)-1]
	t.End, t.EndedAt = end, now.UTC()
	return true
}

// excerpt is s on one line, cut to at most n bytes on a rune boundary.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Excerpt is s on one line, cut to at most n bytes on a rune boundary (with "…" when cut).
func Excerpt(s string, n int) string { return excerpt(s, n) }

// mark records that decision id changed since the plan was loaded.
func (p *Plan) mark(id string) {
	if p.dirty == nil {
		p.dirty = map[string]bool{}
	}
	p.dirty[id] = true
}

// Changes says what changed since the plan was loaded or last saved: whole when its list of
// decisions did (a new plan, a new order, removals), else the IDs of the decisions that changed.
// A repository that saves only what changed reads it, and calls Saved once the change is stored.
func (p *Plan) Changes() (whole bool, ids []string) {
	for id := range p.dirty {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return p.whole, ids
}

// Saved forgets the changes Changes reported: they are stored.
func (p *Plan) Saved() { p.whole, p.dirty = false, nil }

// Partial says the plan was loaded with only some of its decisions (RehydratePartial): it can
// record and finish decisions, open and close turns, but not redefine its list.
func (p *Plan) Partial() bool { return p.partial }

// RehydratePartial rebuilds a plan from storage with only the decisions a caller needs (an agent's
// hook touches one tool call of a long session), and its turns.
func RehydratePartial(id, name, source string, checkpoints bool, createdAt time.Time, ds []DecisionState, turns []Turn) *Plan {
	p := Rehydrate(id, name, source, checkpoints, createdAt, ds)
	p.partial, p.turns = true, slices.Clone(turns)
	return p
}

// SetTurns restores the turns of a plan rehydrated from storage.
func (p *Plan) SetTurns(turns []Turn) { p.turns = slices.Clone(turns) }
