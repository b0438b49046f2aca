package port

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
)

// ChangeCounts counts the files and symlinks a change set creates, modifies and deletes.
type ChangeCounts struct{ Added, Modified, Deleted int }

// IncompleteUndoError is returned by a Restorer when a failed Apply could not put the source tree
// back. The workspace is then mixed until recovery succeeds.
type IncompleteUndoError struct {
	Cause error // why the forward step failed
	Undo  error // why putting the source back failed
}

func (e *IncompleteUndoError) Error() string {
	return fmt.Sprintf("%v; putting the workspace back also failed (%v): run `plan recover` once the cause is fixed", e.Cause, e.Undo)
}

// Unwrap exposes both causes.
func (e *IncompleteUndoError) Unwrap() []error { return []error{e.Cause, e.Undo} }

// Clock tells the time; tests inject a fixed one.
type Clock interface{ Now() time.Time }

// Transactor runs fn in one database transaction. Repositories called with the context fn receives
// take part in that transaction.
type Transactor interface {
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// Locker takes the workspace-wide exclusive lock. When another process holds it, Lock waits briefly
// and then fails with a fault.ErrConflict error that names the holder.
type Locker interface {
	Lock(ctx context.Context, purpose string) (unlock func() error, err error)
	// TryLock takes the lock only if it is free right now; ok is false when another process has it.
	TryLock(purpose string) (unlock func() error, ok bool, err error)
}

// Progress receives coarse progress of a long operation. Implementations must be cheap and safe
// for concurrent use (workers report in parallel); a nil Progress is allowed wherever one is
// accepted.
type Progress interface {
	Start(label string, total int64)
	Add(n int64)
	Done()
}

// Snapshot is the result of recording the live workspace.
type Snapshot struct {
	Root        tree.Hash
	Files       int64    // regular files and symlinks
	Bytes       int64    // their logical size
	StoredBytes int64    // bytes newly written to the store
	Warnings    []string // special files skipped, names that cannot be stored
	// Unreadable are the paths the snapshot could not read (permission denied), sorted: left out
	// of it, and left alone by every restore from or to its tree.
	Unreadable []string `json:",omitempty"`
}

// ReadableScanner is a Snapshotter that also names what its scan could not read.
type ReadableScanner interface {
	// ScanReadable is Scan that also returns, sorted, the live paths it could not read (permission
	// denied), which the entries leave out.
	ScanReadable(ctx context.Context, p Progress) ([]tree.Entry, []string, error)
}

// Snapshotter reads the live workspace (honouring the ignore rules) and records it in the store.
type Snapshotter interface {
	// Snapshot stores every new object and returns the durable root tree. The ignore rules that the
	// trees also name recorded apply on top of the live ones, so a rollback's safety checkpoint
	// never stores what the target excludes.
	Snapshot(ctx context.Context, p Progress, also ...tree.Hash) (Snapshot, error)
	// Scan returns the live workspace as an ordered entry list without storing anything.
	Scan(ctx context.Context, p Progress) ([]tree.Entry, error)
	// OpenLive opens the regular file at a workspace-relative path without following symlinks.
	OpenLive(path string) (io.ReadCloser, error)
}

// ChangeTracker is implemented by a Snapshotter that can follow the workspace's changes while one
// command takes several snapshots (a run takes one before and one after every decision), so that
// each snapshot after the first reads only what changed. Track starts following; the returned stop
// ends it (calls may nest). Tracking never changes what a snapshot records, only what it costs:
// whatever the tracker cannot vouch for is read again.
type ChangeTracker interface {
	Track() (stop func())
}

// TreeStore reads what the store holds. Every read verifies content hashes; damage is a
// fault.ErrIntegrity error.
type TreeStore interface {
	Flatten(root tree.Hash) ([]tree.Entry, error)
	DiffTrees(from, to tree.Hash) ([]tree.Change, error)
	OpenBlob(h tree.Hash) (io.ReadCloser, error)
}

// ApplyStats counts what a workspace change did.
type ApplyStats struct {
	Written int // files and symlinks written
	Removed int // paths removed
	Dirs    int // directories created
	Chmods  int // mode-only changes
	// Kept lists paths left alone because they hold data outside every snapshot (ignored files).
	Kept []string
}

// Restorer changes the live workspace to a stored tree, one path at a time, never writing through a
// symlink or outside the workspace.
type Restorer interface {
	// Apply turns the workspace, which holds tree from, into tree to. It stages and verifies every new
	// file before touching the workspace; if it fails part-way it puts from back before returning.
	// It returns the error of the forward step; if putting from back failed too, the error says so and
	// the caller must leave the journal in place for recovery.
	Apply(ctx context.Context, from, to tree.Hash, p Progress) (ApplyStats, error)
	// ApplyDiff is Apply for a caller that has compared the trees already: changes is what
	// TreeStore.DiffTrees(from, to) returned, and is not computed again.
	ApplyDiff(ctx context.Context, from, to tree.Hash, changes []tree.Change, p Progress) (ApplyStats, error)
	// Reconcile makes the workspace equal to tree to, whatever it holds now. Crash recovery uses it.
	Reconcile(ctx context.Context, to tree.Hash) (ApplyStats, error)
	// Unrecorded lists the live paths whose state none of trees holds (a file written or edited after
	// a crash, say): what Reconcile would destroy unless it is recorded first.
	Unrecorded(ctx context.Context, trees ...tree.Hash) ([]string, error)
}

// Direction says which way a journaled operation is heading.
type Direction string

// The directions.
const (
	Forward  Direction = "forward"  // toward the operation's target tree
	Backward Direction = "backward" // back to the source tree after a failure
)

// Operation is what the journal records about a workspace change in progress: enough to finish it
// or undo it after a crash without asking anyone. Its stored form belongs to the Journal adapter.
type Operation struct {
	ID        string
	Kind      string // "rollback" or "correction"
	Direction Direction
	Source    tree.Hash // the workspace before the operation
	Target    tree.Hash // the workspace after it
	// TargetCheckpoint is the checkpoint being restored; BackupCheckpoint the pre_rollback one.
	TargetCheckpoint checkpoint.ID
	BackupCheckpoint checkpoint.ID
	StartedAt        time.Time
	// Counts is what the change does to the workspace, for the history record.
	Counts ChangeCounts
	// Detail carries use-case specific data (a correction's record) as opaque JSON.
	Detail []byte
}

// Journal stores at most one pending Operation durably.
type Journal interface {
	// Write records op, replacing any previous record, and returns only once it is durable.
	Write(op Operation) error
	// Pending returns the recorded operation, or nil when there is none. A journal that cannot be
	// parsed is a fault.ErrIntegrity error.
	Pending() (*Operation, error)
	// Clear removes the record durably.
	Clear() error
}

// GitProbe reads the HEAD commit of the git repository containing the workspace without running
// git or changing anything. ok is false outside a repository or on an unborn branch.
type GitProbe interface {
	Head() (commit string, ok bool)
}

// Exporter writes stored entries into a directory that is not the workspace.
type Exporter interface {
	// Export materialises entries (ordered as a tree's Flatten orders them: every directory before
	// what it holds) into target, which must not exist or be an empty directory. Nothing is written
	// to target itself until everything is: the copy is built beside it and renamed into place, so
	// target ends up either as it was or complete. It never writes through a symlink.
	Export(ctx context.Context, entries []tree.Entry, target string, p Progress) (ExportStats, error)
}

// ExportStats counts what an export wrote.
type ExportStats struct {
	Files    int   // regular files
	Symlinks int   // symbolic links
	Dirs     int   // directories
	Bytes    int64 // content of the regular files
}
