// Package checkpoint is the checkpoint aggregate: a named, immutable record of one workspace tree
// (its Merkle root in the object store) with the metadata the contract prints.
//
// Invariants:
//   - a checkpoint's root tree and every object under it are durable before the checkpoint is added
//     to the repository (the adapters' write order guarantees it; the entity cannot check it);
//   - the tree, counts and timestamps never change after creation; only the rollback count grows;
//   - a checkpoint referenced as another's parent may be deleted; the child keeps a dangling parent ID
//     and reports it as such rather than failing.
package checkpoint

import (
	"context"
	"maps"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// ID identifies a checkpoint.
type ID string

// Type says why a checkpoint was taken.
type Type string

// The checkpoint types of the contract.
const (
	PreDecision       Type = "pre_decision"
	PreRollback       Type = "pre_rollback"
	PreCorrection     Type = "pre_correction"
	Manual            Type = "manual"
	SafeState         Type = "safe_state"
	PreRiskyOperation Type = "pre_risky_operation"
	Milestone         Type = "milestone"
	// PreRecover records what the workspace held when crash recovery found changes made after the
	// crash, before recovery finished or undid the interrupted operation.
	PreRecover Type = "pre_recover"
	// Clone is the first checkpoint of a workspace made by plan clone: another workspace's
	// checkpoint of the same shared store, adopted as the start of this one's history.
	Clone Type = "clone"
	// PostRun records the state a plan run or exec ended in, after its last decision: what the
	// plan produced, which rollback, clone and diff can then reach.
	PostRun Type = "post_run"
	// TurnStart records the workspace as an agent's user prompt arrived: the state `plan rewind
	// --turn N` goes back to.
	TurnStart Type = "turn_start"
	// TurnEnd records the workspace an agent's turn left, when the agent stopped.
	TurnEnd Type = "turn_end"
	// Periodic is taken by `plan watch --every D` after each D of active work; Idle by
	// `plan watch --quiet D` once the workspace has not changed for D after a change.
	Periodic Type = "periodic"
	Idle     Type = "idle"
)

// Types lists every valid type.
var Types = []Type{PreDecision, PreRollback, PreCorrection, Manual, SafeState, PreRiskyOperation, Milestone, PreRecover, Clone, PostRun, TurnStart, TurnEnd, Periodic, Idle}

// ParseType validates a type name.
func ParseType(s string) (Type, error) {
	for _, t := range Types {
		if string(t) == s {
			return t, nil
		}
	}
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return "", fault.Invalid("unknown checkpoint type %q (one of: %s)", s, strings.Join(names, ", "))
}

// Stats are the measured figures of a checkpoint.
type Stats struct {
	Files       int64 // regular files and symlinks
	Bytes       int64 // their logical size
	StoredBytes int64 // what this checkpoint newly added to the store
	Duration    time.Duration
}

// Params are the inputs to New.
type Params struct {
	ID         string
	Type       Type
	CreatedAt  time.Time
	Note       string
	DecisionID string // empty when not taken for a decision
	ParentID   ID     // empty for the first checkpoint
	GitCommit  string // empty outside a git repository
	Root       tree.Hash
	Stats      Stats
	// Labels are the user's KEY=VALUE tags (see ValidateLabels); Pinned keeps it from every prune.
	Labels map[string]string
	Pinned bool
}

// Checkpoint is the aggregate root.
type Checkpoint struct {
	id            ID
	typ           Type
	createdAt     time.Time
	note          string
	decisionID    string
	parentID      ID
	gitCommit     string
	root          tree.Hash
	stats         Stats
	rollbackCount int
	labels        map[string]string
	pinned        bool
}

// MaxNoteLength bounds a note so a stray pipe cannot fill the database.
const MaxNoteLength = 4096

// New validates p and returns a checkpoint.
func New(p Params) (*Checkpoint, error) {
	if err := ident.ValidateFull("checkpoint", p.ID); err != nil {
		return nil, err
	}
	if _, err := ParseType(string(p.Type)); err != nil {
		return nil, err
	}
	if len(p.Note) > MaxNoteLength {
		return nil, fault.Invalid("note is %d bytes; at most %d", len(p.Note), MaxNoteLength)
	}
	if p.Root.IsZero() {
		return nil, fault.Invalid("checkpoint needs a root tree")
	}
	if p.CreatedAt.IsZero() {
		return nil, fault.Invalid("checkpoint needs a creation time")
	}
	if p.Stats.Files < 0 || p.Stats.Bytes < 0 || p.Stats.StoredBytes < 0 {
		return nil, fault.Invalid("checkpoint statistics cannot be negative")
	}
	if err := ValidateLabels(p.Labels); err != nil {
		return nil, err
	}
	return &Checkpoint{
		id: ID(p.ID), typ: p.Type, createdAt: p.CreatedAt.UTC(), note: p.Note,
		decisionID: p.DecisionID, parentID: p.ParentID, gitCommit: p.GitCommit,
		root: p.Root, stats: p.Stats, labels: maps.Clone(p.Labels), pinned: p.Pinned,
	}, nil
}

// Rehydrate rebuilds a stored checkpoint. Only persistence mappers call it.
func Rehydrate(p Params, rollbackCount int) *Checkpoint {
	return &Checkpoint{
		id: ID(p.ID), typ: p.Type, createdAt: p.CreatedAt.UTC(), note: p.Note,
		decisionID: p.DecisionID, parentID: p.ParentID, gitCommit: p.GitCommit,
		root: p.Root, stats: p.Stats, rollbackCount: rollbackCount, labels: maps.Clone(p.Labels), pinned: p.Pinned,
	}
}

// ID returns the checkpoint's ID.
func (c *Checkpoint) ID() ID { return c.id }

// Type returns why the checkpoint was taken.
func (c *Checkpoint) Type() Type { return c.typ }

// CreatedAt returns the creation time in UTC.
func (c *Checkpoint) CreatedAt() time.Time { return c.createdAt }

// Note returns the user's note.
func (c *Checkpoint) Note() string { return c.note }

// DecisionID returns the decision the checkpoint was taken for, or "".
func (c *Checkpoint) DecisionID() string { return c.decisionID }

// ParentID returns the previous checkpoint, or "".
func (c *Checkpoint) ParentID() ID { return c.parentID }

// GitCommit returns the git HEAD commit at creation, or "".
func (c *Checkpoint) GitCommit() string { return c.gitCommit }

// Root returns the root tree hash.
func (c *Checkpoint) Root() tree.Hash { return c.root }

// Stats returns the measured figures.
func (c *Checkpoint) Stats() Stats { return c.stats }

// RollbackCount returns how many rollbacks targeted this checkpoint.
func (c *Checkpoint) RollbackCount() int { return c.rollbackCount }

// RecordRollback counts one more rollback to this checkpoint.
func (c *Checkpoint) RecordRollback() { c.rollbackCount++ }

// Labels returns a copy of the checkpoint's labels (never nil).
func (c *Checkpoint) Labels() map[string]string {
	if c.labels == nil {
		return map[string]string{}
	}
	return maps.Clone(c.labels)
}

// HasLabels reports whether the checkpoint carries every one of want, value for value.
func (c *Checkpoint) HasLabels(want map[string]string) bool {
	for k, v := range want {
		if got, ok := c.labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Pinned reports whether the checkpoint is kept from every prune.
func (c *Checkpoint) Pinned() bool { return c.pinned }

// SetPinned pins or unpins the checkpoint.
func (c *Checkpoint) SetPinned(on bool) { c.pinned = on }

// Label limits.
const (
	MaxLabels          = 32
	MaxLabelValueBytes = 256
)

// labelKey is a label's key: lower-case letters, digits, '.', '_' and '-', starting with a letter
// or digit, at most 63 bytes.
var labelKey = ident.NewPattern("a-z0-9", "a-z0-9._-", 63) // ^[a-z0-9][a-z0-9._-]{0,62}$

// ParseLabel splits "KEY=VALUE" and validates both.
func ParseLabel(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fault.Invalid("label %q is not KEY=VALUE", s)
	}
	return key, value, ValidateLabels(map[string]string{key: value})
}

// ValidateLabels checks a label set (see labelKey; a value is printable UTF-8 up to 256 bytes).
func ValidateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fault.Invalid("%d labels; at most %d", len(labels), MaxLabels)
	}
	for k, v := range labels {
		if !labelKey.Match(k) {
			return fault.Invalid("label key %q: use lower-case letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", k)
		}
		if len(v) > MaxLabelValueBytes || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
			return fault.Invalid("label %s: the value must be printable text of at most %d bytes", k, MaxLabelValueBytes)
		}
	}
	return nil
}

// Repository persists checkpoints. Implementations translate their own not-found errors to
// fault.ErrNotFound and take part in the caller's unit of work when the context carries one.
type Repository interface {
	Add(ctx context.Context, c *Checkpoint) error
	Get(ctx context.Context, id ID) (*Checkpoint, error)
	// Resolve finds the one checkpoint whose ID starts with ref (a validated prefix). No match is
	// fault.ErrNotFound; several are fault.ErrInvalid naming the candidates.
	Resolve(ctx context.Context, ref string) (*Checkpoint, error)
	// List returns all checkpoints, newest first.
	List(ctx context.Context) ([]*Checkpoint, error)
	// IDs returns the ID of every checkpoint, in no particular order: what names need, without
	// reading whole records.
	IDs(ctx context.Context) ([]ID, error)
	// ListSince returns the checkpoints created at or after t, oldest first.
	ListSince(ctx context.Context, t time.Time) ([]*Checkpoint, error)
	// Latest returns the newest checkpoint, or fault.ErrNotFound when there is none.
	Latest(ctx context.Context) (*Checkpoint, error)
	Delete(ctx context.Context, id ID) error
	Update(ctx context.Context, id ID, fn func(*Checkpoint) error) error
}
