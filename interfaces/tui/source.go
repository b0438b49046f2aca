// Package tui is `plan browse`: the full-screen timeline of a workspace, its previews and its
// actions, as a bubbletea model. The model is a plain value driven by messages, so its whole
// behaviour is tested without a terminal; everything it reads or changes goes through a Source,
// which the CLI implements with the services and commands the plain commands use (an action
// taken here is logged and undone as the same command typed). Keys and screens: docs/browse.md.
package tui

import (
	"context"
	"time"
)

// Entry is one line of the timeline: a checkpoint (a state the workspace can be rewound to) or an
// entry of the operation log (a command that changed the workspace).
type Entry struct {
	// Key names the entry among all of them ("cp:ID", "op:ID"); it keeps the cursor on its entry
	// across reloads.
	Key  string
	Time time.Time
	// Kind is what the entry is, in words ("tool call", "turn start", "decision", "rollback").
	Kind string
	// Who is the agent and tool, the decision or the plan behind the entry.
	Who string
	// Summary is the note, the tool call's summary or the command line.
	Summary string
	// ID is the checkpoint's or the log entry's ID, as the plain commands take it.
	ID string
	// Rewind is the checkpoint a rewind to before this entry restores ("" when there is none).
	Rewind string
	// Session and Plan are what the filters match (the agent session, the plan).
	Session, Plan string
	// Flag marks the entry ("undone", "failed", "pinned").
	Flag string
	// HasChanges says the entry has a preview of changed files (a checkpoint).
	HasChanges bool
}

// Snapshot is the timeline as one load found it.
type Snapshot struct {
	Entries []Entry // newest first
	// Pending describes an operation a crash interrupted ("" when there is none).
	Pending string
}

// Counts are an entry's changed files: added, modified, deleted.
type Counts struct {
	Added, Modified, Deleted int
}

// Change is one changed path of an entry: its letter (A, M, D, T) and path.
type Change struct {
	Letter, Path string
}

// ActionKind names what an action does.
type ActionKind string

// The actions.
const (
	Rewind ActionKind = "rewind"
	Undo   ActionKind = "undo"
	Redo   ActionKind = "redo"
)

// Action is one change of the workspace the user asked for.
type Action struct {
	Kind  ActionKind
	Entry Entry // the entry a rewind goes to before; unused by undo and redo
}

// Outcome is what a dry run or an action said.
type Outcome struct {
	// Text is the command's report (its dry run, or what it did), or its error message.
	Text string
	// Failed says the command refused or failed; Busy that the workspace's lock refused it (a
	// retry may succeed).
	Failed, Busy bool
}

// Source is everything the browser reads and does.
type Source interface {
	// Load reads the timeline.
	Load(ctx context.Context) (Snapshot, error)
	// Changes lists what changed from the entry to the next one (the workspace, for the newest).
	Changes(ctx context.Context, e Entry) ([]Change, error)
	// Counts counts the entry's changes.
	Counts(ctx context.Context, e Entry) (Counts, error)
	// Patch is the diff of one changed path of the entry (a one-line note for a binary or large
	// file).
	Patch(ctx context.Context, e Entry, path string) (string, error)
	// DryRun says what the action would change, changing nothing.
	DryRun(ctx context.Context, a Action) Outcome
	// Do runs the action.
	Do(ctx context.Context, a Action) Outcome
}
