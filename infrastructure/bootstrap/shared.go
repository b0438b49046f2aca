package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/bucket"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// SharedConfig names a shared store (and, optionally, the database its workspaces share) to look
// at without being in one of its workspaces: `plan workspaces` and `plan clone`.
type SharedConfig struct {
	Store, DB string
	// Getenv reads the S3 endpoint and credentials; nil means os.Getenv.
	Getenv func(string) string
}

// OpenShared opens the shared store cfg names, and its database when cfg.DB is set, and returns
// the use cases that look at them; closeStore releases both.
func OpenShared(ctx context.Context, cfg SharedConfig) (svc *application.SharedStoreService, closeStore func(), err error) {
	kind, err := config.StoreKind(cfg.Store)
	if err != nil {
		return nil, nil, err
	}
	if _, err := config.DBKind(cfg.DB); err != nil {
		return nil, nil, err
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	o := &openedShared{}
	switch kind {
	case "":
		return nil, nil, fault.Invalid("--store is required: the URL of a shared store (file:///abs/path or s3://bucket[/prefix])")
	case "file":
		root := config.FilePath(cfg.Store)
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, nil, fault.NotFound("the store %s does not exist", cfg.Store)
		}
		o.be = objectstore.NewDir(root, true)
	case "s3":
		if o.cache, err = os.MkdirTemp("", "plan-shared-"); err != nil {
			return nil, nil, err
		}
		b, err := bucket.Open(ctx, bucket.Config{URL: cfg.Store, CacheDir: o.cache, Getenv: getenv})
		if err != nil {
			_ = os.RemoveAll(o.cache)
			return nil, nil, err
		}
		o.be = b
	}
	// A nil database is no database: never a typed nil behind the port.
	var db port.SharedDatabase
	if cfg.DB != "" {
		dsn := withPassword(cfg.DB, getenv)
		if o.db, err = persistence.Open(ctx, dsn, false, persistence.WithoutWorkspace()); err != nil {
			o.close()
			return nil, nil, err
		}
		db = sharedDatabase{db: o.db, dsn: dsn}
	}
	store := sharedStore{be: o.be}
	return application.NewSharedStoreService(cfg.Store, store, store, db, localMachine{}), o.close, nil
}

// openedShared is what OpenShared opened.
type openedShared struct {
	be    objectstore.Backend
	cache string // a temporary cache for a remote store, removed by close
	db    *persistence.DB
}

// close releases the store and the database.
func (o *openedShared) close() {
	if o.db != nil {
		_ = o.db.Close()
	}
	if o.be != nil {
		closeBackend(o.be)
	}
	if o.cache != "" {
		_ = os.RemoveAll(o.cache)
	}
}

// sharedStore is a shared store as the shared-store use cases reach it (application.SharedStore)
// and its workspaces' records (application.SharedRecords).
type sharedStore struct{ be objectstore.Backend }

func (s sharedStore) Location() string { return s.be.Location("") }

func (s sharedStore) DescriptorLocation(id string) string {
	return s.be.Location(descriptorName(id))
}

// descriptorName is where a shared store keeps workspace id's descriptor (storeindex.Descriptor),
// which says where the workspace was made, so `plan workspaces` can name it without any database.
func descriptorName(id string) string { return "workspaces/" + id + ".json" }

func (s sharedStore) Workspaces() ([]port.StoredWorkspace, error) {
	v, err := storeindex.ReadForListing(s.be)
	if err != nil {
		return nil, err
	}
	out := make([]port.StoredWorkspace, 0, len(v.Workspaces))
	for _, w := range v.Workspaces {
		sw := port.StoredWorkspace{ID: w.ID, DescriptorDamaged: w.DescriptorDamaged, Retired: w.Retired != nil}
		if d := w.Descriptor; d != nil {
			sw.Descriptor = &port.WorkspaceDescriptor{WorkspaceID: d.WorkspaceID, Root: d.Root, Host: d.Host, CreatedAt: d.CreatedAt}
		}
		if w.Retired != nil {
			sw.RetiredAt = w.Retired.RetiredAt
		}
		if w.State != nil {
			sum := w.State.Summary()
			sw.Checkpoints, sw.LastCheckpointAt = sum.Checkpoints, sum.LastCheckpoint
		}
		out = append(out, sw)
	}
	return out, nil
}

func (s sharedStore) Descriptor(id string) (port.WorkspaceDescriptor, bool, error) {
	b, err := s.be.ReadFile(descriptorName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return port.WorkspaceDescriptor{}, false, nil
	}
	if err != nil {
		return port.WorkspaceDescriptor{}, false, err
	}
	var d storeindex.Descriptor
	if json.Unmarshal(b, &d) != nil {
		d = storeindex.Descriptor{} // one that does not parse names no workspace: damaged
	}
	return port.WorkspaceDescriptor{WorkspaceID: d.WorkspaceID, Root: d.Root, Host: d.Host, CreatedAt: d.CreatedAt}, true, nil
}

func (s sharedStore) Retirement(id string) (bool, time.Time, error) {
	r, err := storeindex.ReadRetirement(s.be, id)
	if err != nil || r == nil {
		return false, time.Time{}, err
	}
	return true, r.RetiredAt, nil
}

func (s sharedStore) Retire(id, host string, now time.Time) (time.Time, bool, error) {
	r, already, err := storeindex.Retire(s.be, id, host, now)
	if err != nil {
		return time.Time{}, false, err
	}
	return r.RetiredAt, already, nil
}

func (s sharedStore) Now() (time.Time, error) { return s.be.Now() }

func (s sharedStore) records(id string) *objectstore.Records {
	return objectstore.NewRecords(s.be, objectstore.WorkspaceRecords(id))
}

func (s sharedStore) Committed(id string) (bool, error) {
	names, err := s.records(id).Committed()
	return len(names) > 0, err
}

func (s sharedStore) Checkpoints(id string) ([]port.RecordedCheckpoint, error) {
	sum, err := persistence.SummarizeLedger(s.records(id))
	if err != nil {
		return nil, err
	}
	out := make([]port.RecordedCheckpoint, len(sum.List))
	for i, c := range sum.List {
		out[i] = port.RecordedCheckpoint{ID: c.ID, Root: c.Root, CreatedAt: c.CreatedAt, Pinned: c.Pinned}
	}
	return out, nil
}

// sharedDatabase is the database a shared store's workspaces share (application.SharedDatabase).
type sharedDatabase struct {
	db  *persistence.DB
	dsn string
}

func (d sharedDatabase) Workspaces(ctx context.Context) ([]port.DatabaseWorkspace, error) {
	rows, err := d.db.Workspaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]port.DatabaseWorkspace, len(rows))
	for i, r := range rows {
		out[i] = port.DatabaseWorkspace{ID: r.ID, Root: r.Root, Host: r.Host, CreatedAt: r.CreatedAt, Checkpoints: r.Checkpoints, Newest: r.Newest}
	}
	return out, nil
}

func (d sharedDatabase) Checkpoints(ctx context.Context, id string) (port.WorkspaceCheckpoints, error) {
	db, err := persistence.Open(ctx, d.dsn, false, persistence.WithWorkspace(id))
	if err != nil {
		return nil, err
	}
	return workspaceCheckpoints{Repository: persistence.NewCheckpoints(db), db: db}, nil
}

// workspaceCheckpoints are one workspace's checkpoints in a shared database, with the handle that
// reaches them.
type workspaceCheckpoints struct {
	checkpoint.Repository
	db *persistence.DB
}

func (c workspaceCheckpoints) Close() error { return c.db.Close() }

// localMachine is this machine (application.Machine).
type localMachine struct{}

func (localMachine) Hostname() string {
	host, _ := os.Hostname()
	return host
}

func (localMachine) ConfiguredWorkspace(root string) (string, error) {
	l, err := workspace.NewLayout(root)
	if err != nil {
		return "", nil //nolint:nilerr // no directory a workspace can be in, so none it is configured for
	}
	f, err := config.Load(config.Path(l.State()))
	return f.WorkspaceID, err
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
