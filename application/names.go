package application

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/ref"
	"github.com/planhq/plan/domain/tree"
)

// The names of checkpoints (IDs and their prefixes, short names, @, @~N, DECISION^, DECISION,
// PLAN/DECISION[^], PLAN#N[^], label:KEY=VALUE, note:TEXT) are read by domain/ref; here they are
// resolved against the repositories.

// checkName refuses a name that has none of the forms of the grammar, before any lookup (and before
// a command waits for the workspace lock).
func checkName(name string) error { return ref.Parse(name).Check() }

// resolve finds the checkpoint name names.
func (o *Operations) resolve(ctx context.Context, name string) (*checkpoint.Checkpoint, error) {
	r := ref.Parse(name)
	switch r.Kind {
	case ref.Selector:
		return o.newestMatching(ctx, r)
	case ref.Scoped:
		return o.resolveScoped(ctx, r)
	case ref.Newest:
		n, err := r.Back()
		if err != nil {
			return nil, err
		}
		return o.back(ctx, n, name)
	case ref.Before:
		return o.beforeDecision(ctx, r.Decision)
	}
	type reading struct {
		what string
		cp   *checkpoint.Checkpoint
	}
	var found []reading
	if r.IsID() {
		cp, err := o.checkpoints.Resolve(ctx, name)
		switch {
		case err == nil:
			found = append(found, reading{"checkpoint " + string(cp.ID()), cp})
		case !errors.Is(err, fault.ErrNotFound):
			return nil, err // ambiguous, or the database failed
		}
	}
	if r.IsShort() {
		cp, err := o.byShortName(ctx, name)
		switch {
		case err == nil:
			found = append(found, reading{"checkpoint " + string(cp.ID()) + " (short name " + name + ")", cp})
		case !errors.Is(err, fault.ErrNotFound):
			return nil, err
		}
	}
	var afterErr error
	// Looking the plan up costs a read of all its decisions: a full ID is tried as nothing else.
	if r.IsFullID() && len(found) == 1 {
		return found[0].cp, nil
	}
	if r.IsDecision() {
		d, ok, err := o.currentDecision(ctx, name)
		if err != nil {
			return nil, err
		}
		if ok {
			cp, err := o.afterDecision(ctx, d)
			if err == nil {
				found = append(found, reading{"the state decision " + name + " left", cp})
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
		return nil, fault.Invalid("%q is ambiguous: it names %s", name, strings.Join(whats, " and "))
	case afterErr != nil:
		return nil, afterErr
	}
	return nil, r.Unmatched()
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
	all, err := s.checkpoints.IDs(ctx)
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

// newestMatching returns the newest checkpoint a selector matches.
func (o *Operations) newestMatching(ctx context.Context, sel ref.Ref) (*checkpoint.Checkpoint, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	all, err := o.checkpoints.List(ctx) // newest first
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if sel.Matches(c) {
			return c, nil
		}
	}
	return nil, fault.NotFound("no checkpoint %s (%s)", sel.What(), sel.Text)
}
