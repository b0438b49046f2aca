// Package correction is the correction aggregate: the record that a decision was wrong, that it and
// every decision executed after it were reverted, where what they produced was archived, and how the
// re-execution went.
//
// Invariants:
//   - only a decision that has executed, is not running and is not already reverted can be corrected,
//     and only when its latest attempt has a pre_decision checkpoint to roll back to;
//   - the scope is the target's latest attempt and the latest attempt of every decision that started
//     at or after it and finished (succeeded, failed or interrupted), in start order;
//   - a correction is recorded only after its revert step (archive + rollback) completed, so a stored
//     correction always points at an archive that exists and a workspace that was rolled back;
//   - status moves reverted → reexecuting → succeeded | failed, or stays reverted (--no-reexecute);
//   - a surgical correction (plan revert) reverts its target decision alone, keeping what later
//     decisions did: its scope is that one attempt, no later decision is re-executed, and it is
//     recorded finished (succeeded) once its revert step is done, unless a replacement command runs
//     for the decision alone (then reverted → reexecuting → succeeded | failed); the paths it left
//     with conflict markers are kept with it, and it needs attention (NeedsAttention; shown as
//     status needs_attention, never succeeded) until the user marked every one resolved; a
//     resolved conflict stays recorded with the time it was resolved.
package correction

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Status is where a correction stands.
type Status string

// The statuses.
const (
	Reverted    Status = "reverted"    // revert step done; re-execution not requested or not started
	Reexecuting Status = "reexecuting" // re-execution under way
	Succeeded   Status = "succeeded"   // every re-executed decision succeeded
	Failed      Status = "failed"      // a re-executed decision failed or was interrupted
)

// Kind says how a correction reverted its decision.
type Kind string

// The kinds.
const (
	// Full reverts the decision and every decision executed after it (plan correct).
	Full Kind = "full"
	// Surgical reverts the decision's own changes alone and keeps later work (plan revert).
	Surgical Kind = "surgical"
)

// Conflict is one path a surgical revert could not merge cleanly, and why.
type Conflict struct {
	Path string
	Why  string
	// Written names what was written for the user to resolve: the path itself (conflict markers)
	// or PATH.reverted (the decision's pre-state beside it); empty when nothing was.
	Written string
	// ResolvedAt is when the user marked it resolved (`plan resolve`); zero while it is not.
	ResolvedAt time.Time
}

// Item is one reverted attempt.
type Item struct {
	DecisionID   string
	Attempt      int
	CheckpointID checkpoint.ID
	ResultTree   tree.Hash // zero when the attempt's result was not recorded
	StartedAt    time.Time
	Artifacts    []artifact.Artifact
}

// Scope returns the attempts a correction of decision id reverts (see the package invariants).
func Scope(p *plan.Plan, id string) ([]Item, error) {
	d, err := p.Decision(id)
	if err != nil {
		return nil, err
	}
	latest, ran := d.Latest()
	switch {
	case !ran:
		return nil, fault.Conflict("decision %q has not executed yet; there is nothing to correct", id)
	case latest.Status == plan.Reverted:
		return nil, fault.Conflict("decision %q is already reverted (by %s); run it again before correcting it", id, latest.RevertedBy)
	case latest.Status == plan.Running:
		return nil, fault.Conflict("decision %q is still running", id)
	case latest.CheckpointID == "":
		return nil, fault.Conflict("decision %q ran without a pre_decision checkpoint (--no-checkpoints): it cannot be rolled back", id)
	}
	var items []Item
	for _, o := range p.Decisions() {
		a, ran := o.Latest()
		if !ran || a.StartedAt.Before(latest.StartedAt) {
			continue
		}
		switch a.Status {
		case plan.Succeeded, plan.Failed, plan.Interrupted:
			items = append(items, Item{
				DecisionID: o.ID(), Attempt: a.Number, CheckpointID: a.CheckpointID, ResultTree: a.ResultTree,
				StartedAt: a.StartedAt, Artifacts: a.Artifacts,
			})
		}
	}
	slices.SortStableFunc(items, func(a, b Item) int { return a.StartedAt.Compare(b.StartedAt) })
	return items, nil
}

// Params are a new correction's fields.
type Params struct {
	ID                   string
	DecisionID           string
	Reason               string
	Command              string // replacement command for the target; "" keeps the plan's
	Scope                []Item
	SafetyCheckpointID   string
	RollbackCheckpointID string
	ArchiveDir           string
	CreatedAt            time.Time
	// Kind is Full unless set; Conflicts are a surgical correction's unresolved paths.
	Kind      Kind
	Conflicts []Conflict
}

// MaxReason bounds a reason's length.
const MaxReason = 4096

// Correction is the aggregate root.
type Correction struct {
	p          Params
	status     Status
	reexecuted []string
	finishedAt time.Time
}

// New validates p and returns a correction in status Reverted.
func New(p Params) (*Correction, error) {
	if err := ident.ValidateFull("correction", p.ID); err != nil {
		return nil, err
	}
	if err := plan.ValidateDecisionID(p.DecisionID); err != nil {
		return nil, err
	}
	if err := ValidateReason(p.Reason); err != nil {
		return nil, err
	}
	if len(p.Scope) == 0 || p.Scope[0].DecisionID != p.DecisionID {
		return nil, fault.Invalid("a correction's scope starts with its target decision")
	}
	if p.SafetyCheckpointID == "" || p.RollbackCheckpointID == "" || p.ArchiveDir == "" {
		return nil, fault.Invalid("a correction needs its safety and rollback checkpoints and its archive")
	}
	if p.Kind == "" {
		p.Kind = Full
	}
	if p.Kind != Full || len(p.Conflicts) > 0 {
		return nil, fault.Invalid("a full correction has kind %q and no conflicts (NewSurgical records a surgical one)", Full)
	}
	return &Correction{p: p, status: Reverted}, nil
}

// NewSurgical validates p and returns a surgical correction. Without a replacement command it is
// finished (succeeded) at now: its revert step is all it does. With one (p.Command) it is reverted,
// and the replacement's run moves it on like a full correction's re-execution.
func NewSurgical(p Params, now time.Time) (*Correction, error) {
	full := p
	full.Kind, full.Conflicts = Full, nil
	if _, err := New(full); err != nil {
		return nil, err
	}
	if len(p.Scope) != 1 {
		return nil, fault.Invalid("a surgical correction reverts exactly one attempt")
	}
	p.Kind = Surgical
	if p.Command != "" {
		return &Correction{p: p, status: Reverted}, nil
	}
	return &Correction{p: p, status: Succeeded, finishedAt: now.UTC()}, nil
}

// Kind says whether the correction was full or surgical.
func (c *Correction) Kind() Kind {
	if c.p.Kind == "" {
		return Full
	}
	return c.p.Kind
}

// NeedsAttention reports whether the correction left conflicts the user has not resolved yet.
func (c *Correction) NeedsAttention() bool { return len(c.Unresolved()) > 0 }

// Unresolved returns the conflicts not marked resolved yet.
func (c *Correction) Unresolved() []Conflict {
	var out []Conflict
	for _, x := range c.p.Conflicts {
		if x.ResolvedAt.IsZero() {
			out = append(out, x)
		}
	}
	return out
}

// Resolve marks the unresolved conflict at path resolved at now; fault.ErrNotFound when the
// correction has none there.
func (c *Correction) Resolve(path string, now time.Time) error {
	for i, x := range c.p.Conflicts {
		if x.Path == path && x.ResolvedAt.IsZero() {
			c.p.Conflicts = slices.Clone(c.p.Conflicts) // Params handed out earlier stay as they were
			c.p.Conflicts[i].ResolvedAt = now.UTC()
			return nil
		}
	}
	return fault.NotFound("correction %s has no unresolved conflict at %s", c.p.ID, path)
}

// ShownStatus is the status as users see it: a finished correction that left conflicts not
// resolved yet is "needs_attention", not "succeeded".
func (c *Correction) ShownStatus() string {
	if c.status == Succeeded && c.NeedsAttention() {
		return "needs_attention"
	}
	return string(c.status)
}

// ValidateReason checks a correction's reason.
func ValidateReason(r string) error {
	if strings.TrimSpace(r) == "" {
		return fault.Invalid("a correction needs a reason (--reason TEXT)")
	}
	if len(r) > MaxReason {
		return fault.Invalid("the reason is %d bytes; at most %d", len(r), MaxReason)
	}
	return nil
}

// Rehydrate rebuilds a stored correction. Only persistence mappers call it.
func Rehydrate(p Params, status Status, reexecuted []string, finishedAt time.Time) *Correction {
	return &Correction{p: p, status: status, reexecuted: reexecuted, finishedAt: finishedAt}
}

// ID returns the correction's ID.
func (c *Correction) ID() string { return c.p.ID }

// Params returns the correction's fixed fields.
func (c *Correction) Params() Params { return c.p }

// Status returns where the correction stands.
func (c *Correction) Status() Status { return c.status }

// Reexecuted returns the decisions re-executed so far.
func (c *Correction) Reexecuted() []string { return c.reexecuted }

// FinishedAt returns when re-execution ended (zero while it has not).
func (c *Correction) FinishedAt() time.Time { return c.finishedAt }

// RevertedDecisions returns the IDs of the scope's decisions.
func (c *Correction) RevertedDecisions() []string {
	ids := make([]string, len(c.p.Scope))
	for i, it := range c.p.Scope {
		ids[i] = it.DecisionID
	}
	return ids
}

// StartReexecution moves a reverted correction to reexecuting.
func (c *Correction) StartReexecution() error {
	if c.status != Reverted {
		return fault.Conflict("correction %s is %s; only a reverted correction can re-execute", c.p.ID, c.status)
	}
	c.status = Reexecuting
	return nil
}

// RecordReexecuted records one more re-executed decision.
func (c *Correction) RecordReexecuted(id string) { c.reexecuted = append(c.reexecuted, id) }

// Finish ends re-execution.
func (c *Correction) Finish(ok bool, now time.Time) error {
	if c.status != Reexecuting {
		return fault.Conflict("correction %s is not re-executing", c.p.ID)
	}
	c.status = Failed
	if ok {
		c.status = Succeeded
	}
	c.finishedAt = now.UTC()
	return nil
}

// Repository persists corrections.
type Repository interface {
	Add(ctx context.Context, c *Correction) error
	Get(ctx context.Context, id string) (*Correction, error)
	// Resolve finds one correction by full ID or unique prefix (fault.ErrInvalid when ambiguous).
	Resolve(ctx context.Context, ref string) (*Correction, error)
	// List returns corrections, newest first.
	List(ctx context.Context) ([]*Correction, error)
	Update(ctx context.Context, id string, fn func(*Correction) error) error
}
