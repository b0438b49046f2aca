package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/internal/bucket"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
	"github.com/planhq/plan/infrastructure/internal/timing"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Setup is a workspace resolved from its configuration: where it is, who it is, and where its
// content and metadata live. Every adapter is built from it.
type Setup struct {
	Layout workspace.Layout
	// File is .plan/config.yaml as read (or, for a new workspace, as written).
	File config.File
	// WorkspaceID is the workspace's identity: the configuration's, or "" for a workspace made
	// before workspaces had one (its database holds it; see persistence.WithWorkspace).
	WorkspaceID string
	// DBTarget is what persistence.Open is given: the SQLite path, or the DSN (at init, with the
	// credentials the user passed, which the configuration never records).
	DBTarget string
	// Created says this Open made the workspace.
	Created bool
	// Reattached says this Open gave a directory that had lost its .plan/ its history back.
	Reattached bool
	// Notice is what the user should hear about how this Open found the workspace (a deleted
	// workspace's history kept at the same path, say), or "".
	Notice string

	made *madeDirs

	getenv func(string) string
}

// Shared says the workspace's store is shared (file:// or s3://).
func (s *Setup) Shared() bool { return s.File.Store != "" }

// CacheDir is where a remote store's local cache lives.
func (s *Setup) CacheDir() string { return filepath.Join(s.Layout.Home(), "cache") }

// Resolve reads (and, with cfg.Init, makes) the workspace's configuration. It is what Open does
// before building anything; `plan doctor` uses it alone, since it must work when the rest cannot.
func Resolve(cfg Config) (*Setup, error) {
	defer timing.Span("open.config")()
	l, err := workspace.NewLayout(cfg.Root)
	if err != nil {
		return nil, err
	}
	s := &Setup{Layout: l, getenv: cfg.Getenv, made: cfg.made}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	if s.File, err = config.Load(config.Path(l.State())); err != nil {
		return nil, err
	}
	if err := storeRequest(cfg.Store); err != nil {
		return nil, err
	}
	if _, err := config.DBKind(cfg.DB); err != nil {
		return nil, err
	}
	if err := s.checkKinds(); err != nil {
		return nil, err
	}
	if err := s.locate(); err != nil {
		return nil, err
	}
	l = s.Layout
	initialized := l.Initialized() || s.File.DB != ""
	if !initialized && s.File.StateDir == "" && s.File.WorkspaceID == "" && !cfg.NewHistory {
		// No configuration: a directory that lost its .plan/ is still a workspace, whose history
		// is in the data directory. init (and the commands that initialise) re-attach it.
		former, err := s.former(cfg.Init)
		if err != nil {
			return nil, err
		}
		if former != nil && !cfg.Init {
			return nil, formerError(l.Root, *former)
		}
		if former != nil {
			if err := s.reattach(*former); err != nil {
				return nil, err
			}
			l, initialized = s.Layout, s.Layout.Initialized()
		}
	}
	switch {
	case cfg.Init && !initialized:
		if err := s.create(cfg); err != nil {
			return nil, err
		}
	case cfg.Init:
		// plan init is idempotent, never a way to move a workspace to another store: that would
		// orphan its history.
		if cfg.Store != "" && cfg.Store != s.File.Store && (cfg.Store != InWorkspace || s.File.StateDir != "") {
			return nil, fault.Conflict("%s is already a workspace on store %q: its store cannot change", l.Root, orPrivate(s.File.Store, l))
		}
		if dsn, _ := config.RedactDSN(cfg.DB); cfg.DB != "" && dsn != s.File.DB {
			return nil, fault.Conflict("%s is already a workspace with database %q: its database cannot change", l.Root, orDefault(s.File.DB, l))
		}
		if cfg.WorkspaceID != "" && cfg.WorkspaceID != s.File.WorkspaceID {
			return nil, fault.Conflict("%s is already a workspace (%s)", l.Root, s.File.WorkspaceID)
		}
	case !initialized:
		if hasPacks(l) {
			return nil, fault.Integrity("the metadata database %s is missing but the store is not empty: run `plan doctor --rebuild`", l.Database())
		}
		return nil, l.RequireInitialized()
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkKinds refuses a configuration whose store or database is of no kind plan knows.
func (s *Setup) checkKinds() error {
	if _, err := config.StoreKind(s.File.Store); err != nil {
		return fault.Wrap(fault.ErrInvalid, err, "%s", config.Path(s.Layout.State()))
	}
	if _, err := config.DBKind(s.File.DB); err != nil {
		return fault.Wrap(fault.ErrInvalid, err, "%s", config.Path(s.Layout.State()))
	}
	return nil
}

// finish checks the configuration an open goes on with, and binds the workspace to its directory.
func (s *Setup) finish() error {
	l := s.Layout
	if err := s.checkKinds(); err != nil {
		return err
	}
	s.WorkspaceID = s.File.WorkspaceID
	if (s.Shared() || l.Outside()) && s.WorkspaceID == "" {
		return fault.Integrity("%s names a shared store or a state directory but no workspace_id: the workspace's records cannot be found", config.Path(l.State()))
	}
	if s.DBTarget == "" {
		s.DBTarget = s.File.DB
		if s.DBTarget == "" {
			s.DBTarget = l.Database()
		}
	}
	s.DBTarget = withPassword(s.DBTarget, s.getenv)
	if err := s.checkHome(); err != nil {
		return err
	}
	return s.keepCopy()
}

// storeRequest checks the store a command asks init for: a store URL, or InWorkspace.
func storeRequest(store string) error {
	if store == InWorkspace {
		return nil
	}
	_, err := config.StoreKind(store)
	return err
}

// withPassword gives a PostgreSQL DSN that has no password the one PGPASSWORD holds, read through
// getenv (the configuration never records one; without PGPASSWORD the driver reads ~/.pgpass).
func withPassword(dsn string, getenv func(string) string) string {
	kind, _ := config.DBKind(dsn)
	pw := getenv("PGPASSWORD")
	if kind != "postgres" || pw == "" || config.HasPassword(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

func orPrivate(store string, l workspace.Layout) string {
	if store == "" {
		return "the private store in " + l.Objects()
	}
	return store
}

func orDefault(db string, l workspace.Layout) string {
	if db == "" {
		return l.Database()
	}
	return db
}

// create makes .plan/ and writes the configuration of a new workspace: a fresh identity, and the
// store and database asked for (the DSN without its credentials).
func (s *Setup) create(cfg Config) error {
	l := s.Layout
	if !l.Initialized() && hasPacks(l) {
		return fault.Integrity("%s holds stored objects but no metadata database: run `plan doctor --rebuild` instead of re-initialising", l.State())
	}
	if why := l.Dangerous(); why != "" && !cfg.AllowDangerousRoot {
		return fault.Invalid("refusing to make %s a workspace: %s, and every checkpoint would copy all of it (pass --force-root if you mean it)", l.Root, why)
	}
	if err := outsideWorkspace(l, cfg); err != nil {
		return err
	}
	f := s.File
	if f.WorkspaceID == "" {
		f.WorkspaceID = cfg.WorkspaceID
		if f.WorkspaceID == "" {
			f.WorkspaceID = ident.New(time.Now())
		}
	}
	if f.StateDir == "" && cfg.Store != InWorkspace && !l.Initialized() {
		inside, err := s.dataInside()
		if err != nil {
			return err
		}
		if !inside {
			if err := s.makeState(f.WorkspaceID); err != nil {
				return err
			}
			f.StateDir = s.Layout.Data
			l = s.Layout
		}
	}
	if err := l.Init(); err != nil {
		return err
	}
	if f.WorkspaceID != "" && cfg.WorkspaceID != "" && cfg.WorkspaceID != f.WorkspaceID {
		return fault.Conflict("%s is already being made workspace %s", l.Root, f.WorkspaceID)
	}
	// No database here: Resolve takes a configuration that names one for an existing workspace.
	if f.Store != "" && cfg.Store != "" && f.Store != cfg.Store {
		return fault.Conflict("%s holds a configuration for another store: remove .plan/ to start over", l.Root)
	}
	if cfg.Store != "" && cfg.Store != InWorkspace {
		f.Store = cfg.Store
	}
	if cfg.DB != "" {
		f.DB, _ = config.RedactDSN(cfg.DB)
		s.DBTarget = cfg.DB
	}
	if err := config.Save(config.Path(l.State()), f); err != nil {
		if werr := l.CheckWritable(); werr != nil {
			return werr
		}
		return err
	}
	s.File, s.Created = f, true
	return nil
}

// outsideWorkspace refuses a file:// store or a sqlite:// database inside the workspace (but
// outside .plan/): every checkpoint would record the store's own files, growing without end, and
// a rollback would rewrite the database under itself.
func outsideWorkspace(l workspace.Layout, cfg Config) error {
	var paths []string
	if kind, _ := config.StoreKind(cfg.Store); kind == "file" {
		paths = append(paths, config.FilePath(cfg.Store))
	}
	if kind, _ := config.DBKind(cfg.DB); kind == "sqlite" {
		paths = append(paths, filepath.Clean(strings.TrimPrefix(cfg.DB, "sqlite://")))
	}
	for _, p := range paths {
		if resolved, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(resolved, filepath.Base(p))
		}
		if within(p, l.State()) || !within(p, l.Root) {
			continue
		}
		return fault.Invalid("%s is inside the workspace %s: every checkpoint would record it; put it outside (or under %s)", p, l.Root, l.State())
	}
	return nil
}

// within says whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// hasPacks reports whether the private store holds anything a lost database would have
// referenced: packs, or records of committed transactions.
func hasPacks(l workspace.Layout) bool { return l.StoreHolds("packs") || l.StoreHolds("records") }

// OpenStore opens the workspace's object store and the records of its database's history.
func (s *Setup) OpenStore(ctx context.Context, init bool) (*objectstore.Store, *objectstore.Records, error) {
	kind, _ := config.StoreKind(s.File.Store)
	switch kind {
	case "":
		// Lazy: a command that reads only the database never reads the packs' idx files.
		st, err := objectstore.OpenBackendLazy(objectstore.NewDir(s.Layout.Objects(), false), s.Layout.Objects())
		if err != nil {
			return nil, nil, err
		}
		st.Failpoint = failpoint.Hit
		recs, err := objectstore.OpenRecords(s.Layout.Objects())
		if err != nil {
			_ = st.Close()
			if werr := s.Layout.CheckWritable(); werr != nil {
				return nil, nil, werr
			}
			return nil, nil, err
		}
		return st, recs, nil
	}
	be, work, err := s.sharedBackend(ctx, init)
	if err != nil {
		return nil, nil, err
	}
	if init {
		// Before anything is written there: another product's files are never plan's to weigh.
		if err := objectstore.CheckRoot(be); err != nil {
			closeBackend(be)
			return nil, nil, err
		}
	}
	if err := s.checkRetired(be); err != nil {
		closeBackend(be)
		return nil, nil, err
	}
	st, err := objectstore.OpenBackendLazy(be, work)
	if err != nil {
		closeBackend(be)
		return nil, nil, err
	}
	st.Failpoint = failpoint.Hit
	recs := objectstore.NewRecords(be, objectstore.WorkspaceRecords(s.WorkspaceID))
	recs.Confirm = st.Confirm
	return st, recs, nil
}

// sharedBackend reaches the shared store the configuration names (file:// or s3://) and returns
// it with the store's local work directory.
func (s *Setup) sharedBackend(ctx context.Context, init bool) (objectstore.Backend, string, error) {
	kind, _ := config.StoreKind(s.File.Store)
	var be objectstore.Backend
	var work string
	switch kind {
	case "file":
		root := config.FilePath(s.File.Store)
		if init {
			if err := os.MkdirAll(root, 0o700); err != nil {
				return nil, "", fmt.Errorf("create the store %s: %w", s.File.Store, err)
			}
		} else if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, "", fault.Unavailable("the store %s is not there (%v)", s.File.Store, errOr(err, "not a directory"))
		}
		be, work = objectstore.NewDir(root, true), root
	case "s3":
		var limit int64
		if s.File.Cache != nil && s.File.Cache.MaxBytes != "" {
			var err error
			if limit, err = config.ParseBytes(s.File.Cache.MaxBytes); err != nil {
				return nil, "", fault.Wrap(fault.ErrInvalid, err, "%s: cache.max_bytes", config.Path(s.Layout.State()))
			}
		}
		b, err := bucket.Open(ctx, bucket.Config{URL: s.File.Store, CacheDir: s.CacheDir(), CacheMax: limit, Create: init, Getenv: s.getenv})
		if err != nil {
			return nil, "", err
		}
		be, work = b, s.CacheDir()
	}
	return be, work, nil
}

func errOr(err error, msg string) any {
	if err != nil {
		return err
	}
	return msg
}

// closeBackend releases what a remote backend holds (its cache's counters are saved).
func closeBackend(be objectstore.Backend) {
	if c, ok := be.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// describe writes the workspace's descriptor into the shared store once, after its first record
// is committed: a descriptor says the workspace has a history there, so a gc that finds none
// (records deleted, or lost) knows it cannot tell what the workspace keeps, and deletes nothing.
func (s *Setup) describe(be objectstore.Backend) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(storeindex.Descriptor{WorkspaceID: s.WorkspaceID, Root: s.Layout.Root, Host: host, CreatedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := be.Create(descriptorName(s.WorkspaceID), b, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("describe the workspace in the store: %w", err)
	}
	return nil
}

// storeHoldsRecords reports whether the workspace's records are in its store: a database that is
// missing or empty beside them is a lost one, never a fresh one.
func (s *Setup) storeHoldsRecords(recs *objectstore.Records) (bool, error) {
	if !s.Shared() {
		return hasPacks(s.Layout), nil
	}
	names, err := recs.Committed()
	return len(names) > 0, err
}

// dbOptions are the options the workspace's database is opened with.
func (s *Setup) dbOptions(recs *objectstore.Records) []persistence.Option {
	opts := []persistence.Option{persistence.WithLedger(recs)}
	if s.WorkspaceID != "" {
		opts = append(opts, persistence.WithWorkspace(s.WorkspaceID))
	}
	return opts
}

// Inspect reads the workspace at root as `plan doctor` needs it: its layout and configuration,
// without requiring a database (which may be what is missing).
func Inspect(root string, getenv func(string) string) (*Setup, error) {
	l, err := workspace.NewLayout(root)
	if err != nil {
		return nil, err
	}
	s := &Setup{Layout: l, getenv: getenv}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	if _, err := os.Stat(l.State()); err != nil {
		if former, ferr := s.former(false); ferr == nil && former != nil {
			return nil, formerError(l.Root, *former)
		}
		return nil, fault.NotFound("%s is not a plan workspace (no %s/): run `plan init`", l.Root, workspace.StateDir)
	}
	if s.File, err = config.Load(config.Path(l.State())); err != nil {
		return nil, err
	}
	if err := s.locate(); err != nil {
		return nil, err
	}
	l = s.Layout
	for _, check := range []func() error{
		func() error { _, err := config.StoreKind(s.File.Store); return err },
		func() error { _, err := config.DBKind(s.File.DB); return err },
	} {
		if err := check(); err != nil {
			return nil, fault.Wrap(fault.ErrInvalid, err, "%s", config.Path(l.State()))
		}
	}
	s.WorkspaceID = s.File.WorkspaceID
	if (s.Shared() || l.Outside()) && s.WorkspaceID == "" {
		return nil, fault.Integrity("%s names a shared store or a state directory but no workspace_id: the workspace's records cannot be found", config.Path(l.State()))
	}
	s.DBTarget = s.File.DB
	if s.DBTarget == "" {
		s.DBTarget = l.Database()
	}
	s.DBTarget = withPassword(s.DBTarget, s.getenv)
	// doctor --repair and --rebuild write the workspace's history: never under a copied identity.
	if err := s.checkHome(); err != nil {
		return nil, err
	}
	return s, nil
}

// Target is the workspace as `plan doctor` and its rebuild open it (see maintenance.Target).
func (s *Setup) Target() maintenance.Target {
	if !s.Shared() {
		t := maintenance.PrivateTarget(s.Layout)
		t.WorkspaceID, t.DB = s.WorkspaceID, s.DBTarget
		return t
	}
	// The records are reached without opening the store, whose load a damaged idx fails: doctor
	// still checks them, and `doctor --repair` rebuilds that idx before it opens the store.
	var opened struct {
		be   objectstore.Backend
		work string
		recs *objectstore.Records
		err  error
		done bool
	}
	backend := func(ctx context.Context) (*objectstore.Records, error) {
		if !opened.done {
			opened.be, opened.work, opened.err = s.sharedBackend(ctx, false)
			if opened.err == nil {
				opened.recs = objectstore.NewRecords(opened.be, objectstore.WorkspaceRecords(s.WorkspaceID))
			}
			opened.done = true
		}
		return opened.recs, opened.err
	}
	return maintenance.Target{
		Layout: s.Layout, WorkspaceID: s.WorkspaceID, DB: s.DBTarget, Shared: true,
		OpenRecords: backend,
		OpenStore: func(ctx context.Context) (*objectstore.Store, error) {
			recs, err := backend(ctx)
			if err != nil {
				return nil, err
			}
			st, err := objectstore.OpenBackend(opened.be, opened.work)
			if err != nil {
				return nil, err
			}
			st.Failpoint = failpoint.Hit
			recs.Confirm = st.Confirm
			return st, nil
		},
	}
}
