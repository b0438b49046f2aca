// Package view holds the JSON documents plan prints with --json that its MCP server (interfaces/mcp)
// also returns as tool output: the checkpoint, diff, rollback, rewind, revert, undo, status and
// sessions documents and the error document. docs/schema/*.json specifies them.
//
// Both interfaces/cli, which builds these documents from the use cases' results, and interfaces/mcp,
// which decodes what a command printed and derives its tools' output schemas from these types,
// import it; that is why they are here and not in the CLI.
//
// Invariants:
//   - types only, no behaviour: the field names, JSON tags and field order are the contract (a tool's
//     output schema is inferred from them), so a change here is a change to docs/schema;
//   - no domain type appears in a document: the CLI converts to these.
package view

import "time"

// Error is the error document: what --json prints on stderr when a command fails, and what a
// failed MCP tool call carries as text.
type Error struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
	Code int `json:"code"`
}

// Checkpoint is the checkpoint object of the contract.
type Checkpoint struct {
	ID         string  `json:"id"`
	ShortID    string  `json:"short_id"`
	Type       string  `json:"type"`
	CreatedAt  string  `json:"created_at"`
	Note       string  `json:"note"`
	DecisionID *string `json:"decision_id"`
	// Parent is the checkpoint's parent (the head when it was taken); ParentID the same, as
	// scripts written before Parent read it.
	ParentID *string `json:"parent_id"`
	Parent   *string `json:"parent"`
	// Safety marks a safety checkpoint (never the head); Head, present only when true, the head.
	Safety        bool              `json:"safety"`
	Head          bool              `json:"head,omitempty"`
	GitCommit     *string           `json:"git_commit"`
	Files         int64             `json:"files"`
	Bytes         int64             `json:"bytes"`
	StoredBytes   int64             `json:"stored_bytes"`
	DurationMs    float64           `json:"duration_ms"`
	RollbackCount int               `json:"rollback_count"`
	RootTree      string            `json:"root_tree"`
	Labels        map[string]string `json:"labels"`
	Pinned        bool              `json:"pinned"`
	Entries       *[]Entry          `json:"entries,omitempty"`
	// Unreadable, in checkpoint create's output only, are the paths the snapshot could not read.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Entry is one file, directory or symlink of a checkpoint (checkpoint show --files, ls, cat).
type Entry struct {
	Path   string  `json:"path"`
	Kind   string  `json:"kind"`
	Mode   string  `json:"mode"`
	Size   int64   `json:"size"`
	SHA256 *string `json:"sha256"`
	Target *string `json:"target,omitempty"`
}

// Diff is plan diff's output.
type Diff struct {
	From    string    `json:"from"`
	To      *string   `json:"to"`
	Changes []Change  `json:"changes"`
	Stat    *DiffStat `json:"stat,omitempty"`
}

// DiffStat totals a --stat diff.
type DiffStat struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// Change is one path a diff, rollback or rewind changes.
type Change struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Size   int64  `json:"size"`
	Kind   string `json:"kind"`
	Patch  string `json:"patch,omitempty"`
	// Insertions and Deletions are the lines a text file gained and lost (with --stat).
	Insertions *int `json:"insertions,omitempty"`
	Deletions  *int `json:"deletions,omitempty"`
	// Binary says a --stat change has no line counts: a binary or large file.
	Binary bool `json:"binary,omitempty"`
}

// Rollback is plan rollback's output (the MCP restore tool's).
type Rollback struct {
	CheckpointID       string   `json:"checkpoint_id"`
	BackupCheckpointID *string  `json:"backup_checkpoint_id"`
	Added              int      `json:"added"`
	Modified           int      `json:"modified"`
	Deleted            int      `json:"deleted"`
	RevertedDecisions  []string `json:"reverted_decisions"`
	DryRun             bool     `json:"dry_run"`
	Changes            []Change `json:"changes"`
	Kept               []string `json:"kept,omitempty"`
	Mode               string   `json:"mode"`
	// Paths are the workspace-relative paths a per-path restore was limited to.
	Paths []string `json:"paths,omitempty"`
}

// Rewind is plan rewind's output: the rollback, and the point of the session it went back to.
type Rewind struct {
	Rollback
	Session  string  `json:"session"`
	Turn     *int    `json:"turn"`
	ToolCall *string `json:"tool_call"`
}

// Revert is plan revert's output.
type Revert struct {
	CorrectionID       *string      `json:"correction_id"`
	Kind               string       `json:"kind"`
	DecisionID         string       `json:"decision_id"`
	Attempt            int          `json:"attempt"`
	Reason             string       `json:"reason"`
	Status             string       `json:"status"`
	ConflictMode       string       `json:"conflict_mode"`
	DryRun             bool         `json:"dry_run"`
	Refused            bool         `json:"refused"`
	NeedsAttention     bool         `json:"needs_attention"`
	SafetyCheckpointID *string      `json:"safety_checkpoint_id"`
	ArchiveDir         *string      `json:"archive_dir"`
	Added              int          `json:"added"`
	Modified           int          `json:"modified"`
	Deleted            int          `json:"deleted"`
	Paths              []RevertPath `json:"paths"`
	Conflicts          []RevertPath `json:"conflicts"`
	// Command is the replacement run with --run; ReexecutedDecisions names the decision when it ran.
	Command             *string  `json:"command"`
	ReexecutedDecisions []string `json:"reexecuted_decisions"`
}

// RevertPath is one path of a revert's plan: restore, merge or conflict.
type RevertPath struct {
	Path    string  `json:"path"`
	Action  string  `json:"action"`
	Why     *string `json:"why"`
	Written *string `json:"written"`
}

// Undo is plan undo's output.
type Undo struct {
	// Undone is the oldest operation undone (the one whose safety checkpoint the workspace went back
	// to); All every one undone, newest first; Skipped those whose safety checkpoint was gone.
	Undone    Operation   `json:"undone"`
	All       []Operation `json:"undone_all"`
	Skipped   []string    `json:"skipped"`
	Operation *Operation  `json:"operation"`
	Rollback  Rollback    `json:"rollback"`
	// Restored are the decisions the undone operations had reverted, back as they were.
	Restored []string `json:"restored_decisions"`
	DryRun   bool     `json:"dry_run"`
}

// Operation is one entry of the operation log (plan history).
type Operation struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	StartedAt      string   `json:"started_at"`
	FinishedAt     string   `json:"finished_at"`
	Args           []string `json:"args"`
	Outcome        string   `json:"outcome"`
	Checkpoints    []string `json:"checkpoints"`
	Plan           *string  `json:"plan"`
	UndoCheckpoint *string  `json:"undo_checkpoint"`
	UndoneBy       *string  `json:"undone_by"`
}

// WorkspaceStatus is `plan status`: the workspace's state, then its plan's (null, with no
// decisions, when no plan has run).
type WorkspaceStatus struct {
	Plan      *Plan          `json:"plan"`
	Decisions []Decision     `json:"decisions"`
	Workspace WorkspaceState `json:"workspace"`
}

// WorkspaceState is the workspace part of plan status.
type WorkspaceState struct {
	Root             string  `json:"root"`
	LatestCheckpoint *string `json:"latest_checkpoint"`
	// Head is the head (@) the changes are counted against; LatestCheckpoint the same, as scripts
	// written before Head read it.
	Head          *string `json:"head"`
	LatestShortID *string `json:"latest_short_id"`
	// Changes counts what changed since the latest checkpoint (everything is added without one).
	Changes struct {
		Added    int `json:"added"`
		Modified int `json:"modified"`
		Deleted  int `json:"deleted"`
	} `json:"changes"`
	// PendingOperation is an operation a crash interrupted, which `plan recover` finishes.
	PendingOperation *Pending `json:"pending_operation"`
	// Conflicts are those `revert --conflicts markers` left unresolved; Store the store's health.
	Conflicts []OpenConflict `json:"conflicts"`
	Store     StoreHealth    `json:"store"`
	// Unreadable are the live paths a checkpoint could not read (left out, left alone by a
	// rollback); absent when there are none.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Pending names an operation a crash interrupted.
type Pending struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// OpenConflict is a conflict `revert --conflicts markers` left to resolve.
type OpenConflict struct {
	Path         string  `json:"path"`
	Why          string  `json:"why"`
	Written      *string `json:"written"`
	CorrectionID string  `json:"correction_id"`
	DecisionID   string  `json:"decision_id"`
	ResolvedAt   *string `json:"resolved_at"`
}

// StoreHealth is the store's health as status tells it in one line.
type StoreHealth struct {
	OK          bool    `json:"ok"`
	Problem     *string `json:"problem"`
	Location    *string `json:"location"`
	Packs       int     `json:"packs"`
	Objects     int     `json:"objects"`
	StoredBytes int64   `json:"stored_bytes"`
}

// Plan is a plan's object.
type Plan struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Source      string `json:"source"`
	Checkpoints bool   `json:"checkpoints"`
	CreatedAt   string `json:"created_at"`
}

// Decision is a decision of a plan, with its attempts.
type Decision struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Status       string     `json:"status"`
	Attempt      int        `json:"attempt"`
	Command      string     `json:"command"`
	CheckpointID *string    `json:"checkpoint_id"`
	ExitCode     *int       `json:"exit_code"`
	StartedAt    *string    `json:"started_at"`
	FinishedAt   *string    `json:"finished_at"`
	Artifacts    []Artifact `json:"artifacts"`
	Attempts     []Attempt  `json:"attempts"`
}

// Attempt is one run of a decision.
type Attempt struct {
	Attempt      int        `json:"attempt"`
	Status       string     `json:"status"`
	Command      string     `json:"command"`
	CheckpointID *string    `json:"checkpoint_id"`
	ExitCode     *int       `json:"exit_code"`
	StartedAt    *string    `json:"started_at"`
	FinishedAt   *string    `json:"finished_at"`
	RevertedBy   *string    `json:"reverted_by,omitempty"`
	Artifacts    []Artifact `json:"artifacts"`
}

// Artifact is a path a decision's run changed.
type Artifact struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Sessions is plan sessions' output: the recorded agent sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// Session is one agent session, recorded as a plan.
type Session struct {
	Plan      string    `json:"plan"`
	Agent     string    `json:"agent"`
	Session   string    `json:"session"`
	CreatedAt time.Time `json:"created_at"`
	Turns     []Turn    `json:"turns"`
}

// Turn is one turn of an agent session.
type Turn struct {
	Number          int        `json:"number"`
	Prompt          string     `json:"prompt"`
	StartCheckpoint *string    `json:"start_checkpoint"`
	EndCheckpoint   *string    `json:"end_checkpoint"`
	StartedAt       *time.Time `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	ToolCalls       []ToolCall `json:"tool_calls"`
}

// ToolCall is one tool call of a turn, with the checkpoint taken before it.
type ToolCall struct {
	ID         string       `json:"id"`
	Tool       string       `json:"tool"`
	Summary    string       `json:"summary"`
	Status     string       `json:"status"`
	Checkpoint *string      `json:"checkpoint"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt *time.Time   `json:"finished_at"`
	Files      []ChangeFile `json:"files"`
}

// ChangeFile is a path a tool call changed.
type ChangeFile struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}
