package port

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
)

// LoggedOperation is one entry of the operation log (`plan history`): a command that changed the
// workspace or its store, as it ended.
type LoggedOperation struct {
	ID   string
	Kind string // init, checkpoint, run, exec, decision, rollback, correct, revert, undo, redo, resolve, prune, gc, recover, delete, pin, unpin
	Args []string
	// Plan names the plan the operation worked on ("" for none).
	Plan                  string
	StartedAt, FinishedAt time.Time
	// Outcome is OutcomeOK, or how it failed: Outcome's name for its error ("conflict",
	// "integrity", …) or its caller's (OutcomeUsage); a decision entry's is its attempt's status.
	Outcome string
	// Checkpoints are the checkpoints it created or used.
	Checkpoints []checkpoint.ID
	// UndoCheckpoint, when set, is the safety checkpoint taken just before the operation changed
	// the workspace: `plan undo` rolls back to it.
	UndoCheckpoint checkpoint.ID
	// UndoneBy is the undo operation that undid this one ("" while it stands).
	UndoneBy string
}

// RetentionRule is the retention policy kept in .plan/config.yaml.
type RetentionRule struct {
	// Keep is how many of the newest checkpoints to keep; 0 when the policy has no checkpoint rule.
	Keep      int
	OlderThan time.Duration
	// Archives, when set, is the rule for correction archives (see PruneArchives).
	Archives *ArchiveRetention
	// Classes decide for the checkpoints they match (the first that matches), before Keep and
	// OlderThan, which decide for the others.
	Classes []RetentionClass
	// Calendar keeps the newest checkpoint of recent hours, days, weeks and months, with Keep.
	Calendar checkpoint.Calendar
}

// RetentionClass keeps the checkpoints of a type and/or carrying labels for a time, or forever.
type RetentionClass struct {
	Type   checkpoint.Type   // "" matches any type
	Labels map[string]string // every one must be on the checkpoint
	// OlderThan is the age past which a matching checkpoint is deleted; Forever keeps it always.
	OlderThan time.Duration
	Forever   bool
}

// Matches reports whether c falls in the class.
func (r RetentionClass) Matches(c *checkpoint.Checkpoint) bool {
	return (r.Type == "" || c.Type() == r.Type) && c.HasLabels(r.Labels)
}

// String names the class for a prune's reasons.
func (r RetentionClass) String() string {
	var parts []string
	if r.Type != "" {
		parts = append(parts, "type "+string(r.Type))
	}
	keys := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, "label "+k+"="+r.Labels[k])
	}
	if len(parts) == 0 {
		return "every checkpoint"
	}
	return strings.Join(parts, ", ")
}

// ArchiveRetention keeps the newest Keep correction archives (and, with OlderThan, those younger).
type ArchiveRetention struct {
	Keep      int
	OlderThan time.Duration
}

// Settings reads the workspace's optional configuration.
type Settings interface {
	// Retention returns the policy applied after each run; ok is false when none is configured.
	Retention() (rule RetentionRule, ok bool, err error)
	// CheckCommand is the check `plan validate` and `checkpoint create --validate` run
	// (validate.command); "" when none is configured.
	CheckCommand() (string, error)
}

// Metrics records what the stats command reports beyond the checkpoint rows.
type Metrics interface {
	RecordCheckpointFailure(ctx context.Context, at time.Time, reason string) error
	CheckpointFailures(ctx context.Context) (int, error)
}

// HistoryRecord is one finished workspace operation (a rollback or a correction's revert step).
type HistoryRecord struct {
	ID               string
	Kind             string
	TargetCheckpoint checkpoint.ID
	BackupCheckpoint checkpoint.ID
	StartedAt        time.Time
	FinishedAt       time.Time
	Added            int
	Modified         int
	Deleted          int
	Reverted         []string
}

// History records finished operations. Has makes finishers idempotent.
type History interface {
	Record(ctx context.Context, r HistoryRecord) error
	Has(ctx context.Context, id string) (bool, error)
	// Get returns one record; fault.ErrNotFound when there is none.
	Get(ctx context.Context, id string) (HistoryRecord, error)
	List(ctx context.Context) ([]HistoryRecord, error)
}

// OperationLog stores the operation log.
type OperationLog interface {
	Add(ctx context.Context, op LoggedOperation) error
	// List returns operations newest first; limit 0 is all; plan "" is every plan's.
	List(ctx context.Context, limit int, plan string) ([]LoggedOperation, error)
	MarkUndone(ctx context.Context, id, by string) error
}

// OperationReplacer is an OperationLog that can also write an entry whole under its ID, inserting
// it or replacing the one there. A log that has it lets an operation fold its entry into its own
// last transaction (see commitLogged); a log without it gets each entry in a write of its own.
type OperationReplacer interface {
	Replace(ctx context.Context, op LoggedOperation) error
}

// BudgetSettings is the optional part of Settings that reads the disk budget.
type BudgetSettings interface {
	// StoreBudget returns the store's budget in bytes (0: none).
	StoreBudget() (int64, error)
	// WorkspaceQuota returns, for a shared store, this workspace's quota in bytes (0: none).
	WorkspaceQuota() (int64, error)
}
