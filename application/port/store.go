package port

import (
	"context"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/tree"
)

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

// StoreHealer retires damaged or missing copies of stored objects that have an intact copy
// (in the store, the workspace or the archive): `plan verify --repair`.
type StoreHealer interface {
	Heal(ctx context.Context) (HealReport, error)
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

// WorkspaceUsage is the optional part of StoreHealth that measures a workspace's share of a
// shared store: the stored bytes of every object its roots reach (delta bases included).
type WorkspaceUsage interface {
	WorkspaceBytes(roots []tree.Hash) (int64, error)
}
