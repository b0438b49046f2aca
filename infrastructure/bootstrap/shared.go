package bootstrap

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/bucket"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
)

// SharedConfig names a shared store (and, optionally, the database its workspaces share) to look
// at without being in one of its workspaces: `plan workspaces` and `plan clone`.
type SharedConfig struct {
	Store, DB string
	// Getenv reads the S3 endpoint and credentials; nil means os.Getenv.
	Getenv func(string) string
}

// SharedStore is a shared store opened read-only, with the database when one was named.
type SharedStore struct {
	cfg   SharedConfig
	be    objectstore.Backend
	cache string // a temporary cache for a remote store, removed by Close
	db    *persistence.DB
}

// OpenShared opens the shared store cfg names, and its database when cfg.DB is set.
func OpenShared(ctx context.Context, cfg SharedConfig) (*SharedStore, error) {
	kind, err := config.StoreKind(cfg.Store)
	if err != nil {
		return nil, err
	}
	if _, err := config.DBKind(cfg.DB); err != nil {
		return nil, err
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &SharedStore{cfg: cfg}
	switch kind {
	case "":
		return nil, fault.Invalid("--store is required: the URL of a shared store (file:///abs/path or s3://bucket[/prefix])")
	case "file":
		root := config.FilePath(cfg.Store)
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, fault.NotFound("the store %s does not exist", cfg.Store)
		}
		s.be = objectstore.NewDir(root, true)
	case "s3":
		if s.cache, err = os.MkdirTemp("", "plan-shared-"); err != nil {
			return nil, err
		}
		b, err := bucket.Open(ctx, bucket.Config{URL: cfg.Store, CacheDir: s.cache, Getenv: getenv})
		if err != nil {
			_ = os.RemoveAll(s.cache)
			return nil, err
		}
		s.be = b
	}
	s.cfg.DB = withPassword(cfg.DB, getenv)
	if cfg.DB != "" {
		if s.db, err = persistence.Open(ctx, s.cfg.DB, false, persistence.WithoutWorkspace()); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close releases the store and the database.
func (s *SharedStore) Close() {
	if s.db != nil {
		_ = s.db.Close()
	}
	if s.be != nil {
		closeBackend(s.be)
	}
	if s.cache != "" {
		_ = os.RemoveAll(s.cache)
	}
}

// WorkspaceSummary is one workspace of a shared store.
type WorkspaceSummary struct {
	ID, Root, Host   string
	CreatedAt        time.Time
	Checkpoints      int
	LastCheckpointAt time.Time // zero when there is none
	// RetiredAt is when the workspace was retired (zero: it was not).
	RetiredAt time.Time
}

// Workspaces lists the workspaces the store holds: those with records or a descriptor in it,
// without the retired ones unless all is set. Their counts come from the database when one was
// named and holds them, else from their records, read through the summary the last gc wrote (see
// storeindex): a workspace unchanged since is not read.
func (s *SharedStore) Workspaces(ctx context.Context, all bool) ([]WorkspaceSummary, error) {
	v, err := storeindex.ReadForListing(s.be)
	if err != nil {
		return nil, err
	}
	byID := map[string]*WorkspaceSummary{}
	for _, w := range v.Workspaces {
		if ident.ValidateFull("workspace", w.ID) != nil || (w.Retired != nil && !all) {
			continue
		}
		if w.DescriptorDamaged {
			return nil, fault.Integrity("the workspace descriptor %s is damaged", s.be.Location("workspaces/"+w.ID+".json"))
		}
		ws := &WorkspaceSummary{ID: w.ID}
		if d := w.Descriptor; d != nil {
			ws.Root, ws.Host, ws.CreatedAt = d.Root, d.Host, d.CreatedAt
		}
		if w.Retired != nil {
			ws.RetiredAt = w.Retired.RetiredAt
		}
		if w.State != nil {
			sum := w.State.Summary()
			ws.Checkpoints, ws.LastCheckpointAt = sum.Checkpoints, sum.LastCheckpoint
		}
		byID[w.ID] = ws
	}
	if s.db != nil {
		rows, err := s.db.Workspaces(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			w, ok := byID[r.ID]
			if !ok {
				continue // a workspace of the database that keeps its content in another store, or retired
			}
			if w.Root == "" {
				w.Root, w.Host, w.CreatedAt = r.Root, r.Host, r.CreatedAt
			}
			w.Checkpoints, w.LastCheckpointAt = r.Checkpoints, r.Newest
		}
	}
	out := make([]WorkspaceSummary, 0, len(byID))
	for _, w := range byID {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b WorkspaceSummary) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (s *SharedStore) descriptor(id string) (Descriptor, error) {
	var d Descriptor
	b, err := s.be.ReadFile("workspaces/" + id + ".json")
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil || d.WorkspaceID != id {
		return d, fault.Integrity("the workspace descriptor %s is damaged", s.be.Location("workspaces/"+id+".json"))
	}
	return d, nil
}

// SourceCheckpoint is the checkpoint a clone starts from.
type SourceCheckpoint struct {
	Workspace string
	ID        string
	Root      tree.Hash
	CreatedAt time.Time
}

// Checkpoint finds workspace id's checkpoint ref (a full ID or a unique prefix; empty: the newest)
// of the store: in the database when one was named and holds the workspace, else in the
// workspace's records. A workspace the store holds no records of is not found, whatever a database
// says of it (its content is in another store).
func (s *SharedStore) Checkpoint(ctx context.Context, id, ref string) (SourceCheckpoint, error) {
	if err := ident.ValidateFull("workspace", id); err != nil {
		return SourceCheckpoint{}, err
	}
	if ref != "" {
		if err := ident.ValidateRef("checkpoint", ref); err != nil {
			return SourceCheckpoint{}, err
		}
	}
	recs := objectstore.NewRecords(s.be, objectstore.WorkspaceRecords(id))
	if names, err := recs.Committed(); err != nil {
		return SourceCheckpoint{}, err
	} else if len(names) == 0 {
		return SourceCheckpoint{}, fault.NotFound("the store %s holds no workspace %s", s.cfg.Store, id)
	}
	retired, err := storeindex.ReadRetirement(s.be, id)
	if err != nil {
		return SourceCheckpoint{}, err
	}
	if s.db != nil && retired == nil {
		if src, held, err := s.dbCheckpoint(ctx, id, ref); held {
			return src, err
		}
		// A workspace of the store whose metadata is not in this database (its own plan.db):
		// its records are the whole of it, as Workspaces counts it.
	}
	sum, err := persistence.SummarizeLedger(recs)
	if err != nil {
		return SourceCheckpoint{}, err
	}
	var found []persistence.CheckpointSummary
	for _, c := range sum.List {
		if retired != nil && !c.Pinned {
			continue // a retired workspace keeps only its pinned checkpoints
		}
		if ref == "" || strings.HasPrefix(c.ID, ref) {
			found = append(found, c)
		}
		if ref == "" || c.ID == ref {
			break
		}
	}
	switch {
	case len(found) == 0 && retired != nil:
		return SourceCheckpoint{}, fault.NotFound("workspace %s was retired at %s and keeps only its pinned checkpoints: %s",
			id, retired.RetiredAt.UTC().Format(time.RFC3339), map[bool]string{true: "it has none", false: "checkpoint " + ref + " is not one of them"}[ref == ""])
	case len(found) == 0 && ref == "":
		return SourceCheckpoint{}, fault.NotFound("workspace %s has no checkpoint", id)
	case len(found) == 0:
		return SourceCheckpoint{}, fault.NotFound("checkpoint %s not found in workspace %s", ref, id)
	case len(found) > 1 && found[len(found)-1].ID != ref:
		ids := make([]string, len(found))
		for i, c := range found {
			ids[i] = c.ID
		}
		return SourceCheckpoint{}, fault.Invalid("checkpoint ID prefix %s is ambiguous: it matches %s", ref, strings.Join(ids, ", "))
	}
	c := found[len(found)-1]
	return SourceCheckpoint{Workspace: id, ID: c.ID, Root: c.Root, CreatedAt: c.CreatedAt}, nil
}

// dbCheckpoint finds the checkpoint in the database; held is false when the database does not hold
// the workspace.
func (s *SharedStore) dbCheckpoint(ctx context.Context, id, ref string) (src SourceCheckpoint, held bool, err error) {
	db, err := persistence.Open(ctx, s.cfg.DB, false, persistence.WithWorkspace(id))
	if errors.Is(err, fault.ErrNotFound) {
		return SourceCheckpoint{}, false, nil
	}
	if err != nil {
		return SourceCheckpoint{}, true, err
	}
	defer func() { _ = db.Close() }()
	repo := persistence.NewCheckpoints(db)
	var cp *checkpoint.Checkpoint
	if ref == "" {
		if cp, err = repo.Latest(ctx); errors.Is(err, fault.ErrNotFound) {
			return SourceCheckpoint{}, true, fault.NotFound("workspace %s has no checkpoint", id)
		}
	} else {
		cp, err = repo.Resolve(ctx, ref)
	}
	if err != nil {
		return SourceCheckpoint{}, true, err
	}
	return SourceCheckpoint{Workspace: id, ID: string(cp.ID()), Root: cp.Root(), CreatedAt: cp.CreatedAt()}, true, nil
}

// EmptyDir makes sure dir can take a clone: it is created when missing, and must otherwise be an
// empty directory.
func EmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return fault.Invalid("%s is not a directory", dir)
	case err != nil:
		return fault.Invalid("%s cannot be cloned into: %v", dir, err)
	case len(entries) > 0:
		return fault.Conflict("%s is not empty: clone into a new or empty directory", dir)
	}
	return nil
}
