package application

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
)

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

// Command is one decision execution for the Executor.
type Command struct {
	DecisionID string
	Attempt    int
	Script     string // run by /bin/sh -c in the workspace root
	Env        map[string]string
	Timeout    time.Duration // 0: none
	LogPath    string        // relative to the state directory
	// Token is put in the processes' environment (PLAN_ATTEMPT_TOKEN) so Reap can find them.
	Token string
	// Append adds to the log instead of replacing it (a decision's validation, after its output);
	// Banner, when set, is a line written to the log (and live) first.
	Append bool
	Banner string
	// Func, when set, is the decision as Go code (a DecisionFunc the host program provides): it is
	// called with the workspace root instead of running Script, with the same log, live output,
	// environment, timeout and cancellation.
	Func DecisionFunc
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode    int
	TimedOut    bool
	Interrupted bool // the context was cancelled (a signal); the process group was stopped
}

// Executor runs decisions' commands as real processes, keeping their output in the log.
type Executor interface {
	// Execute runs c, writes its output to its log and to live (when not nil), and returns once the
	// process (and its process group) is gone. An error means it could not be started.
	Execute(ctx context.Context, c Command, live io.Writer) (ExecResult, error)
	// OpenLog opens a recorded log.
	OpenLog(path string) (io.ReadCloser, error)
	// Reap stops every process still carrying token (left behind by a plan that was killed) and
	// returns how many it stopped.
	Reap(token string) (int, error)
}

// ArchiveItem is one reverted attempt whose artifacts are archived.
type ArchiveItem struct {
	DecisionID string
	Attempt    int
	// ResultTree is the workspace tree right after the attempt: the content of its artifacts.
	ResultTree tree.Hash
	Artifacts  []artifact.Artifact
}

// Archiver keeps what reverted decisions produced under .plan/archive/<correction_id>/. Staging and
// publishing are separate so the archive appears only together with the correction record.
type Archiver interface {
	// Stage writes every artifact (content from the store, verified) and the manifest into a staging
	// directory and makes it durable. Nothing is visible under the correction's name yet.
	Stage(ctx context.Context, correctionID string, items []ArchiveItem) error
	// Publish moves the staged archive to its final place; it is idempotent.
	Publish(correctionID string) (dir string, err error)
	// Unpublish moves a published archive back to staging (its correction was not recorded).
	Unpublish(correctionID string) error
	// Discard removes a staged (unpublished) archive.
	Discard(correctionID string) error
	// Dir is where the correction's archive is published.
	Dir(correctionID string) string
	// CleanStaged removes staged archives no operation refers to any more.
	CleanStaged() error
	// Remove deletes a published archive and returns the bytes it held; a missing one is 0, nil.
	Remove(correctionID string) (int64, error)
	// Has reports whether the correction's archive is published (not yet removed).
	Has(correctionID string) (bool, error)
	// Usage is the bytes every published archive holds.
	Usage() (int64, error)
}

// ObjectProblem is one damaged or missing object found by verification.
type ObjectProblem struct {
	Path    string
	Problem string
}

// GCReport says what garbage collection removed.
type GCReport struct {
	PacksDeleted   int
	PacksRewritten int
	BytesReclaimed int64
	LiveObjects    int
	// ObjectsReencoded were stored again because the delta base they were rebuilt from is no
	// longer live (a pruned checkpoint's version): they no longer keep it alive.
	ObjectsReencoded int
	// Shared says the store is shared by several workspaces and was collected in two phases:
	// PacksCondemned were marked (deleted by a gc once Grace has passed, if still dead);
	// PacksKept were condemned but are needed again; MarksPending are marks not yet due.
	Shared                    bool
	Grace                     time.Duration
	PacksCondemned, PacksKept int
	MarksPending              int
	// Repack is what gc --aggressive did after collecting; nil without it.
	Repack *RepackReport
}

// RepackReport says what gc --aggressive wrote: the live objects (Bundled of them in Bundles
// bundles, Similar as deltas against a similar file) and the store's size before and after.
type RepackReport struct {
	Objects, Bundles, Bundled, Similar int
	PacksDeleted                       int
	BytesBefore, BytesAfter            int64
	// Kept says the repack would not have made the store smaller: the old packs were kept and
	// the new dropped (BytesAfter is what the new would have taken).
	Kept bool
}

// ConsolidationReport says what a consolidation of small packs did: PacksMerged were copied into
// PacksWritten new packs and removed.
type ConsolidationReport struct {
	PacksMerged, PacksWritten  int
	BytesWritten, BytesRemoved int64
}

// GCRequest says how to collect. Grace, when set, overrides the configured grace period of a
// shared store (how long a pack stays condemned before it is deleted); a private store has none.
type GCRequest struct {
	Grace *time.Duration
	// Aggressive also repacks what is live as compactly as it can (bundles of small files, deltas
	// against similar files, strong compression): off the hot path, as git's gc --aggressive.
	Aggressive bool
	// Progress, when set, is told how far gc --aggressive's repack is.
	Progress Progress
}

// StoreUsage describes the object store's size.
type StoreUsage struct {
	Packs       int
	Objects     int
	StoredBytes int64
	RawBytes    int64
	// Location names a shared store (its URL); empty for the private one.
	Location string
	// Cache describes the local cache of a remote store; nil for a local one.
	Cache *CacheUsage
}

// CacheUsage is what the local cache of a remote store served and holds.
type CacheUsage struct {
	Hits, Misses    int64 // reads served from the cache, and fetched from the store
	DownloadedBytes int64
	CachedBytes     int64
	LimitBytes      int64
}

// HealReport is what healing the store did (verify --repair): damaged or missing copies retired
// because an intact copy now exists.
type HealReport struct {
	// Healed are objects whose damaged or missing copy was retired because an intact copy now
	// exists; Unhealed are damaged or missing objects that still have no intact copy.
	Healed, Unhealed []tree.Hash
	// Spent are damaged or missing bundles retired because none of their blobs is read from them
	// any more (each has a copy of its own): storage, neither healed nor lost.
	Spent []tree.Hash
	// PacksRewritten counts packs rewritten without their damaged records; IdxDropped the indexes
	// of missing packs dropped because every object they listed is stored elsewhere.
	PacksRewritten, IdxDropped int
}

// StoreHealth is what the maintenance use cases need from the object store.
type StoreHealth interface {
	// ListTree returns one stored directory's entries (Path holds the bare name).
	ListTree(h tree.Hash) ([]tree.Entry, error)
	// CheckObject verifies one object: present with a sane size, and with readData its content
	// re-hashed from the store's own bytes (a shared store's, not a local cache's). Damage is a
	// fault.ErrIntegrity error; a store that does not answer or refuses the read fault.ErrUnavailable
	// or fault.ErrDenied (no verdict);
	// anything else is an I/O error worth a retry.
	CheckObject(h tree.Hash, readData bool) error
	// Collect removes every object not reachable from roots. A shared store also keeps what any
	// workspace's records reference, and deletes in two phases (grace, when not nil, overrides the
	// configured wait between them).
	Collect(roots []tree.Hash, grace *time.Duration) (GCReport, error)
	// Repack is Collect followed by a repack of everything live (gc --aggressive); a shared store
	// is refused before anything is done (fault.ErrInvalid).
	// p, when not nil, is told how far the repack is.
	Repack(roots []tree.Hash, p Progress) (GCReport, error)
	// ScanStore reads every stored byte (pack headers, every record including copies no tree
	// uses, the indexes) and reports damage; Path names the pack. It backs verify --read-data,
	// and reads the store's own bytes, as CheckObject does.
	ScanStore() ([]ObjectProblem, error)
	// MissingRecords names the records of the workspace's history that its database has seen and
	// the store no longer holds (deleted by hand, lost with the store): until they are written
	// again, a gc of another workspace of a shared store may collect what they reference.
	MissingRecords(ctx context.Context) ([]string, error)
	Usage() StoreUsage
	// ConsolidationDue tells, without reading anything, whether the store holds enough small packs
	// (one per write) for Consolidate to merge some; Consolidate merges them, copying every record
	// and deciding nothing (what is live is gc's question). The caller holds the workspace lock.
	ConsolidationDue() bool
	Consolidate() (ConsolidationReport, error)
	// WrittenPerDay returns, per UTC day ("2006-01-02"), the bytes the store holds that were written
	// that day: packs (checkpoints, decision results, a gc's rewrites) and records.
	WrittenPerDay() (map[string]int64, error)
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

// TreeWriter stores a workspace tree that no snapshot recorded: a surgical revert's target, which is
// the live tree with one decision's changes taken out, or a tree another workspace recorded in a
// shared store, which a clone adopts.
type TreeWriter interface {
	// StoreEntries stores the tree entries describes (Flatten's form; directory hashes are
	// recomputed) and returns its root, durable when it returns. blobs holds the contents that are
	// new; every other file entry must name content the store holds.
	StoreEntries(entries []tree.Entry, blobs map[tree.Hash][]byte) (tree.Hash, error)
	// Adopt checks that every object under root is held (a copy that can be read, not known
	// damaged), so that a checkpoint may reference root, and counts its files and their bytes. In a
	// shared store it also notes that the next record depends on each of them (see the store's
	// gc protocol). Anything missing is a fault.ErrIntegrity error.
	Adopt(root tree.Hash) (files, bytes int64, err error)
}

// BudgetSettings is the optional part of Settings that reads the disk budget.
type BudgetSettings interface {
	// StoreBudget returns the store's budget in bytes (0: none).
	StoreBudget() (int64, error)
	// WorkspaceQuota returns, for a shared store, this workspace's quota in bytes (0: none).
	WorkspaceQuota() (int64, error)
}

// WorkspaceUsage is the optional part of StoreHealth that measures a workspace's share of a
// shared store: the stored bytes of every object its roots reach (delta bases included).
type WorkspaceUsage interface {
	WorkspaceBytes(roots []tree.Hash) (int64, error)
}

// WorkspaceDescriptor is what a shared store says of one of its workspaces: where it was made, and
// when.
type WorkspaceDescriptor struct {
	WorkspaceID, Root, Host string
	CreatedAt               time.Time
}

// StoredWorkspace is one workspace a shared store holds (records, a descriptor or a retirement of
// it), as the store's listing reads it.
type StoredWorkspace struct {
	ID string
	// Descriptor is nil when the store holds none; DescriptorDamaged says one is there that does not
	// describe the workspace (it does not parse, or names another).
	Descriptor        *WorkspaceDescriptor
	DescriptorDamaged bool
	// Retired says the workspace was retired, at RetiredAt.
	Retired   bool
	RetiredAt time.Time
	// Checkpoints counts the checkpoints its records hold; LastCheckpointAt is when the newest was
	// made (zero when there is none, or its records were not read).
	Checkpoints      int
	LastCheckpointAt time.Time
}

// RecordedCheckpoint is one checkpoint as a workspace's records in a shared store hold it.
type RecordedCheckpoint struct {
	ID        string
	Root      tree.Hash
	CreatedAt time.Time
	// Pinned is set for a checkpoint kept from every prune (and, its workspace retired, from gc).
	Pinned bool
}

// SharedStore is what the shared-store use cases read and write of a shared store, outside any
// of its workspaces.
type SharedStore interface {
	// Location is the store as messages name it; DescriptorLocation is workspace id's descriptor's.
	Location() string
	DescriptorLocation(id string) string
	// Workspaces lists what the store holds of each workspace, through the summary the last gc
	// wrote when one is there (a workspace unchanged since is not read again).
	Workspaces() ([]StoredWorkspace, error)
	// Descriptor reads workspace id's descriptor; ok is false when the store holds none. One that
	// does not parse is returned naming no workspace.
	Descriptor(id string) (d WorkspaceDescriptor, ok bool, err error)
	// Retirement says whether workspace id was retired, and when; a retirement that cannot be read
	// is fault.ErrIntegrity.
	Retirement(id string) (retired bool, at time.Time, err error)
	// Retire retires workspace id from host at now; a workspace retired before keeps its
	// retirement (already is set, and at is that retirement's time).
	Retire(id, host string, now time.Time) (at time.Time, already bool, err error)
	// Now is the store's time.
	Now() (time.Time, error)
}

// SharedRecords reads the records a shared store holds of its workspaces' history.
type SharedRecords interface {
	// Committed says whether the store holds committed records of workspace id.
	Committed(id string) (bool, error)
	// Checkpoints lists the checkpoints workspace id's records hold, newest first.
	Checkpoints(id string) ([]RecordedCheckpoint, error)
}

// DatabaseWorkspace is one workspace of a database its workspaces share.
type DatabaseWorkspace struct {
	ID, Root, Host string
	CreatedAt      time.Time
	// Checkpoints counts its checkpoints; Newest is when the newest was made (zero: none).
	Checkpoints int
	Newest      time.Time
}

// SharedDatabase is a database several workspaces of a shared store share.
type SharedDatabase interface {
	// Workspaces lists every workspace the database holds.
	Workspaces(ctx context.Context) ([]DatabaseWorkspace, error)
	// Checkpoints opens the checkpoints of workspace id, fault.ErrNotFound when the database does
	// not hold it; the caller closes them.
	Checkpoints(ctx context.Context, id string) (WorkspaceCheckpoints, error)
}

// WorkspaceCheckpoints are one workspace's checkpoints in a shared database (see
// checkpoint.Repository for what Latest and Resolve return).
type WorkspaceCheckpoints interface {
	Latest(ctx context.Context) (*checkpoint.Checkpoint, error)
	Resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error)
	Close() error
}

// Machine is the machine a command runs on, as the shared-store use cases look at it.
type Machine interface {
	// Hostname is this machine's name ("" when it has none).
	Hostname() string
	// ConfiguredWorkspace is the workspace ID the configuration in directory root names ("" when
	// none does, or root cannot be a workspace's directory); an error when it cannot be read.
	ConfiguredWorkspace(root string) (string, error)
}
