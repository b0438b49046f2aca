package application

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Names for checkpoints, accepted everywhere a checkpoint is:
//   - a full ID or a unique prefix of it (at least ident.MinPrefix hex characters);
//   - a unique prefix of its short form (ident.Short: letters k..z), as `checkpoint list` shows it;
//   - `@` (or `latest`), the newest checkpoint, and `@~N`, the Nth before it;
//   - `DECISION^`, the pre_decision checkpoint of the latest attempt of a decision of the current
//     plan, and `DECISION`, a checkpoint of the state that attempt left (the next decision's
//     pre_decision checkpoint, or the run's end);
//   - `PLAN/DECISION^`, `PLAN/DECISION`, `PLAN#N^` and `PLAN#N`: a decision, or a turn of an agent
//     session, of a named plan (agentnames.go);
//   - `label:KEY=VALUE`, the newest checkpoint carrying that label, and `note:TEXT`, the newest one
//     whose note contains TEXT.
//
// A name two readings match (a decision called like a checkpoint prefix) is ambiguous: invalid
// input listing both, never a guess.

// checkName refuses a name that has none of the forms above, before any lookup (and before a
// command waits for the workspace lock).
func checkName(ref string) error {
	base := strings.TrimSuffix(ref, "^")
	if sel, ok := selectorOf(ref); ok {
		return sel.err
	}
	switch {
	case ref == "@" || ref == "latest" || strings.HasPrefix(ref, "@~"):
		return nil // @~N's number is checked when it is resolved
	case isScoped(ref):
		return nil
	case ident.ValidateRef("checkpoint", ref) == nil, ident.IsShortRef(ref), plan.ValidateDecisionID(base) == nil:
		return nil
	case strings.Trim(ref, "0123456789abcdef") == "":
		return ident.ValidateRef("checkpoint", ref)
	}
	return fault.Invalid("malformed checkpoint name %q: want an ID or its prefix (%d to %d hex characters), "+
		"a short name (%d to %d letters k-z), @, @~N, DECISION, DECISION^, PLAN/DECISION[^], PLAN#TURN[^], label:KEY=VALUE or note:TEXT", ref, ident.MinPrefix, ident.Length, ident.MinPrefix, ident.ShortLength)
}

// resolve finds the checkpoint ref names.
func (o *Operations) resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error) {
	if sel, ok := selectorOf(ref); ok {
		return o.newestMatching(ctx, sel, ref)
	}
	if n, ok := parseScoped(ref); ok {
		return o.resolveScoped(ctx, n, ref)
	}
	switch {
	case ref == "@" || ref == "latest":
		return o.newest(ctx, 0, ref)
	case strings.HasPrefix(ref, "@~"):
		n, err := strconv.Atoi(ref[2:])
		if err != nil || n < 0 || ref[2:] != strconv.Itoa(n) {
			return nil, fault.Invalid("malformed checkpoint name %q: @~N wants a whole number N >= 0", ref)
		}
		return o.newest(ctx, n, ref)
	case strings.HasSuffix(ref, "^") && len(ref) > 1:
		return o.beforeDecision(ctx, strings.TrimSuffix(ref, "^"))
	}
	type reading struct {
		what string
		cp   *checkpoint.Checkpoint
	}
	var found []reading
	readable := false
	if ident.ValidateRef("checkpoint", ref) == nil {
		readable = true
		cp, err := o.checkpoints.Resolve(ctx, ref)
		switch {
		case err == nil:
			found = append(found, reading{"checkpoint " + string(cp.ID()), cp})
		case !errors.Is(err, fault.ErrNotFound):
			return nil, err // ambiguous, or the database failed
		}
	}
	if ident.IsShortRef(ref) {
		readable = true
		cp, err := o.byShortName(ctx, ref)
		switch {
		case err == nil:
			found = append(found, reading{"checkpoint " + string(cp.ID()) + " (short name " + ref + ")", cp})
		case !errors.Is(err, fault.ErrNotFound):
			return nil, err
		}
	}
	var afterErr error
	// A full ID is no decision's name in practice, and looking the plan up costs a read of all its
	// decisions: only shorter names are also tried as decisions.
	if len(ref) == ident.Length && len(found) == 1 {
		return found[0].cp, nil
	}
	if plan.ValidateDecisionID(ref) == nil {
		readable = true // a name a decision could have
		d, ok, err := o.currentDecision(ctx, ref)
		if err != nil {
			return nil, err
		}
		if ok {
			cp, err := o.afterDecision(ctx, d)
			if err == nil {
				found = append(found, reading{"the state decision " + ref + " left", cp})
			}
			afterErr = err
		}
	}
	switch {
	case len(found) == 1:
		return found[0].cp, nil
	case len(found) > 1:
		whats := make([]string, len(found))
		for i, f := range found {
			whats[i] = f.what
		}
		return nil, fault.Invalid("%q is ambiguous: it names %s", ref, strings.Join(whats, " and "))
	case afterErr != nil:
		return nil, afterErr
	case ident.ValidateRef("checkpoint", ref) != nil && strings.Trim(ref, "0123456789abcdef") == "":
		// Hex of the wrong length: a mistyped ID, far likelier than a decision so named.
		return nil, ident.ValidateRef("checkpoint", ref)
	case !readable:
		return nil, fault.Invalid("malformed checkpoint name %q: want an ID or its prefix (%d to %d hex characters), "+
			"a short name (%d to %d letters k-z), @, @~N, DECISION, DECISION^, PLAN/DECISION[^], PLAN#TURN[^], label:KEY=VALUE or note:TEXT", ref, ident.MinPrefix, ident.Length, ident.MinPrefix, ident.ShortLength)
	}
	return nil, fault.NotFound("no checkpoint %s (nor a decision of the current plan by that name)", ref)
}

// newest returns the nth checkpoint before the newest (0: the newest).
func (o *Operations) newest(ctx context.Context, n int, ref string) (*checkpoint.Checkpoint, error) {
	if n == 0 {
		// The newest alone is one row, not the whole history: `@` is what `cat @ FILE` and
		// `ls @ DIR` name, and listing 500 checkpoints was a fifth of such a command.
		c, err := o.checkpoints.Latest(ctx)
		if !errors.Is(err, fault.ErrNotFound) {
			return c, err
		}
		// None: the list says so in the words every other @~N uses.
	}
	all, err := o.checkpoints.List(ctx)
	if err != nil {
		return nil, err
	}
	if n >= len(all) {
		return nil, fault.NotFound("%s: the workspace has %d checkpoints", ref, len(all))
	}
	return all[n], nil
}

// byShortName finds the one checkpoint whose short form starts with prefix.
func (o *Operations) byShortName(ctx context.Context, prefix string) (*checkpoint.Checkpoint, error) {
	all, err := o.checkpoints.List(ctx)
	if err != nil {
		return nil, err
	}
	var hits []*checkpoint.Checkpoint
	for _, cp := range all {
		if strings.HasPrefix(ident.Short(string(cp.ID())), prefix) {
			hits = append(hits, cp)
		}
	}
	switch len(hits) {
	case 0:
		return nil, fault.NotFound("no checkpoint has the short name %s", prefix)
	case 1:
		return hits[0], nil
	}
	ids := make([]string, len(hits))
	for i, cp := range hits {
		ids[i] = fmt.Sprintf("%s (%s)", cp.ID(), ident.Short(string(cp.ID())))
	}
	return nil, fault.Invalid("short name %s is ambiguous: it matches %s", prefix, strings.Join(ids, ", "))
}

// attemptRef is the latest attempt of a decision of the current plan.
type attemptRef struct {
	decision   string
	number     int
	checkpoint checkpoint.ID // its pre_decision checkpoint ("" when it ran without one)
	result     tree.Hash     // the tree it left (zero when unknown)
	started    time.Time
}

// currentDecision looks id up among the current plan's decisions that have run; ok is false when
// there is no such decision (or no plan).
func (o *Operations) currentDecision(ctx context.Context, id string) (a attemptRef, ok bool, err error) {
	p, err := o.plans.Current(ctx)
	if errors.Is(err, fault.ErrNotFound) {
		return attemptRef{}, false, nil
	}
	if err != nil {
		return attemptRef{}, false, err
	}
	d, err := p.Decision(id)
	if err != nil {
		return attemptRef{}, false, nil //nolint:nilerr // not a decision of this plan: another reading may apply
	}
	as := d.Attempts()
	if len(as) == 0 {
		return attemptRef{}, false, nil
	}
	last := as[len(as)-1]
	return attemptRef{decision: id, number: last.Number, checkpoint: last.CheckpointID, result: last.ResultTree, started: last.StartedAt}, true, nil
}

// beforeDecision is DECISION^: the pre_decision checkpoint of the decision's latest attempt.
func (o *Operations) beforeDecision(ctx context.Context, id string) (*checkpoint.Checkpoint, error) {
	a, ok, err := o.currentDecision(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fault.NotFound("%s^: the current plan has no decision %q that has run", id, id)
	case a.checkpoint == "":
		return nil, fault.NotFound("%s^: attempt %d of decision %q ran without a checkpoint before it", id, a.number, id)
	}
	return o.checkpoints.Get(ctx, a.checkpoint)
}

// afterDecision is DECISION: the earliest checkpoint taken since the attempt started whose tree is
// the one the attempt left.
func (o *Operations) afterDecision(ctx context.Context, a attemptRef) (*checkpoint.Checkpoint, error) {
	if a.result.IsZero() {
		return nil, fault.NotFound("the state attempt %d of decision %q left was not recorded (it is running, or it was interrupted)", a.number, a.decision)
	}
	all, err := o.checkpoints.List(ctx) // newest first
	if err != nil {
		return nil, err
	}
	for _, cp := range slices.Backward(all) {
		if cp.Root() == a.result && !cp.CreatedAt().Before(a.started) {
			return cp, nil
		}
	}
	return nil, fault.NotFound("no checkpoint holds the state decision %q left (the next decision's pre_decision checkpoint "+
		"or the end of its run would): %s^ is the state before it", a.decision, a.decision)
}

// ShortNames returns the short name of every checkpoint of the workspace: the shortest prefix of its
// short form (at least ident.MinPrefix letters) that names it alone, as `checkpoint list` shows it.
// Names grow only when a new checkpoint's short form shares their prefix.
func (s *CheckpointService) ShortNames(ctx context.Context) (map[checkpoint.ID]string, error) {
	all, err := s.ops.checkpoints.IDs(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(all))
	for i, id := range all {
		ids[i] = string(id)
	}
	return shortNamesOf(ids), nil
}

// ShortNamesOf is ShortNames computed from every checkpoint of the workspace, all, when the caller
// has just listed them (checkpoint list): the names of the very checkpoints it shows, without
// reading the IDs a second time.
func ShortNamesOf(all []*checkpoint.Checkpoint) map[checkpoint.ID]string {
	ids := make([]string, len(all))
	for i, c := range all {
		ids[i] = string(c.ID())
	}
	return shortNamesOf(ids)
}

func shortNamesOf(ids []string) map[checkpoint.ID]string {
	names := ident.ShortNames(ids)
	out := make(map[checkpoint.ID]string, len(names))
	for id, n := range names {
		out[checkpoint.ID(id)] = n
	}
	return out
}

// selector is a name that picks the newest checkpoint matching it: label:KEY=VALUE or note:TEXT.
type selector struct {
	match func(*checkpoint.Checkpoint) bool
	what  string
	err   error // a malformed selector
}

// selectorOf reads ref as a selector; ok is false when it is none.
func selectorOf(ref string) (sel selector, ok bool) {
	if l, ok := strings.CutPrefix(ref, "label:"); ok {
		k, v, err := checkpoint.ParseLabel(l)
		if err != nil {
			return selector{err: fault.Invalid("malformed checkpoint name %q: label:KEY=VALUE (%v)", ref, err)}, true
		}
		return selector{what: "carries the label " + l, match: func(c *checkpoint.Checkpoint) bool {
			return c.HasLabels(map[string]string{k: v})
		}}, true
	}
	if text, ok := strings.CutPrefix(ref, "note:"); ok {
		if text == "" {
			return selector{err: fault.Invalid("malformed checkpoint name %q: note:TEXT wants some text", ref)}, true
		}
		return selector{what: "has a note containing " + strconv.Quote(text), match: func(c *checkpoint.Checkpoint) bool {
			return strings.Contains(c.Note(), text)
		}}, true
	}
	return selector{}, false
}

// newestMatching returns the newest checkpoint sel matches.
func (o *Operations) newestMatching(ctx context.Context, sel selector, ref string) (*checkpoint.Checkpoint, error) {
	if sel.err != nil {
		return nil, sel.err
	}
	all, err := o.checkpoints.List(ctx) // newest first
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if sel.match(c) {
			return c, nil
		}
	}
	return nil, fault.NotFound("no checkpoint %s (%s)", sel.what, ref)
}
