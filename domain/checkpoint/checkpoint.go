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
	"strings"
	"time"

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
)

// Types lists every valid type.
var Types = []Type{PreDecision, PreRollback, PreCorrection, Manual, SafeState, PreRiskyOperation, Milestone, PreRecover}

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
	return &Checkpoint{
		id: ID(p.ID), typ: p.Type, createdAt: p.CreatedAt.UTC(), note: p.Note,
		decisionID: p.DecisionID, parentID: p.ParentID, gitCommit: p.GitCommit,
		root: p.Root, stats: p.Stats,
	}, nil
}

// Rehydrate rebuilds a stored checkpoint. Only persistence mappers call it.
func Rehydrate(p Params, rollbackCount int) *Checkpoint {
	return &Checkpoint{
		id: ID(p.ID), typ: p.Type, createdAt: p.CreatedAt.UTC(), note: p.Note,
		decisionID: p.DecisionID, parentID: p.ParentID, gitCommit: p.GitCommit,
		root: p.Root, stats: p.Stats, rollbackCount: rollbackCount,
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
	// Latest returns the newest checkpoint, or fault.ErrNotFound when there is none.
	Latest(ctx context.Context) (*Checkpoint, error)
	Delete(ctx context.Context, id ID) error
	Update(ctx context.Context, id ID, fn func(*Checkpoint) error) error
}
