// Package bootstrap wires plan with uber-go/fx: one module per adapter, and Module, which assembles
// them for one workspace. A host program embeds plan by adding Module to its own fx graph and asking
// for the services it needs, or Scoped once per workspace when it has several; the CLI uses Open to
// start a short-lived app per command.
//
// Invariants: constructors stay plain New… functions so everything can also be wired by hand; fx
// appears in no other package (and the root package plan, which only re-exports); OnStop hooks
// close the store and the database, so stopping the app releases every file handle; a Scoped
// module MUST export nothing but its *Workspace (every other provider is fx.Private), so any number
// of them share one app; the operation log is wired into the shared core (OperationsIn.Log), so
// whichever service a host asks for logs its operations.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/dig"
	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/infrastructure/internal/archive"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/executor"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/timing"
	"github.com/planhq/plan/infrastructure/internal/watch"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Config selects the workspace.
type Config struct {
	// Root is the workspace directory.
	Root string
	// Init creates .plan/ when it is missing (plan init, plan run, plan exec); otherwise a missing
	// workspace is a fault.ErrNotFound error with a hint to run `plan init`.
	Init bool
	// AllowDangerousRoot lets Init make the file system root or the home directory a workspace.
	AllowDangerousRoot bool
	// Store and DB are, for Init of a new workspace, where its content and metadata go (a store
	// URL file:///abs/path or s3://bucket[/prefix]; a DSN sqlite:///abs/path or postgres://…);
	// empty means .plan/objects and .plan/plan.db. An existing workspace keeps what its
	// configuration says: asking Init for another is a conflict.
	Store, DB string
	// WorkspaceID is, for Init of a new workspace, its identity (plan clone makes one); empty means
	// a fresh one.
	WorkspaceID string
	// NewHistory makes Init start a new, unrelated history in a directory that lost its .plan/,
	// instead of re-attaching the one kept in the data directory (`plan init --new`).
	NewHistory bool
	// Getenv is the environment plan's settings are read from: the S3 endpoint and credentials
	// (AWS_*), PGPASSWORD, and PLAN_WATCH=0 (every snapshot walks, asking no change-tracking
	// service), read once when the workspace opens; nil means os.Getenv. The adapters never read
	// the process's environment themselves.
	Getenv func(string) string
	// LockWait is how long a command waits for the workspace lock another process holds; zero
	// means the locker's default. An agent's hook waits longer: parallel tool calls queue on it.
	LockWait time.Duration
	// Host names the program for the decisions it runs as Go functions (application.DecisionFunc),
	// so that `plan correct` from the CLI, which cannot run them, says which program can; ""
	// is the program's base name (os.Args[0]).
	Host string
	// Funcs are Go functions registered by name (PlanService.Register) when the app starts.
	Funcs map[string]port.DecisionFunc

	made *madeDirs // what Init made, for Open to take back when the graph fails
}

// Module is plan for one workspace in a host's fx app, sealed: the host's graph sees the services
// (CheckpointService, PlanService, CorrectionService, HistoryService, MaintenanceService,
// ReadService, AgentService) and nothing of the adapters, ports or the guard behind them, which
// stay private to the module. Scoped is the same for one of several workspaces.
func Module(cfg Config) fx.Option {
	private := append([]any{func() Config { return cfg }, Resolve, layoutOf, newResources, newStore}, persistenceProviders()...)
	private = append(private, workspaceProviders()...)
	private = append(private, kernelProviders()...)
	return fx.Module("plan",
		fx.Provide(append(private, fx.Private)...),
		fx.Provide(serviceProviders()...),
	)
}

// Wiring is the whole graph for the workspace cfg names, every adapter and port in it visible:
// what Open starts for the CLI, and what the composition root's own tests look into. A host uses
// Module (or package plan), which exports the services only.
func Wiring(cfg Config) fx.Option {
	return fx.Module("plan",
		fx.Supply(cfg),
		fx.Provide(Resolve, layoutOf, newResources),
		PersistenceModule,
		StoreModule,
		WorkspaceModule,
		ApplicationModule,
	)
}

func layoutOf(s *Setup) workspace.Layout { return s.Layout }

// PersistenceModule provides the SQLite database and the repositories.
var PersistenceModule = fx.Module("persistence", fx.Provide(persistenceProviders()...))

func persistenceProviders() []any {
	return []any{
		newDB,
		func(d *persistence.DB) checkpoint.Repository { return persistence.NewCheckpoints(d) },
		func(d *persistence.DB) port.History { return persistence.NewHistory(d) },
		func(d *persistence.DB) port.Transactor { return persistence.NewTransactor(d) },
		func(d *persistence.DB) plan.Repository { return persistence.NewPlans(d) },
		func(d *persistence.DB) correction.Repository { return persistence.NewCorrections(d) },
		func(d *persistence.DB) port.Metrics { return persistence.NewMetrics(d) },
		func(d *persistence.DB) port.OperationLog { return persistence.NewOperationLog(d) },
	}
}

// resources closes what the constructors opened. It is one lifecycle hook rather than one per
// resource so that Open can also close everything when the graph fails half-built: fx runs no stop
// hook for an app that never started, and a host or test process would keep the database open.
type resources struct {
	mu      sync.Mutex // guards closers
	closers []func() error
}

func newResources(lc fx.Lifecycle) *resources {
	r := &resources{}
	lc.Append(fx.StopHook(r.close))
	return r
}

func (r *resources) add(fn func() error) {
	r.mu.Lock()
	r.closers = append(r.closers, fn)
	r.mu.Unlock()
}

// close closes every resource once, last opened first.
func (r *resources) close() error {
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	return errors.Join(errs...)
}

func newDB(res *resources, s *Setup, cfg Config, recs *objectstore.Records) (*persistence.DB, error) {
	defer timing.Span("open.db")()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A database may only start empty while the store holds none of its records: an empty
	// database beside them is a lost one, and gc against it would delete everything.
	create := false
	if cfg.Init {
		held, err := s.storeHoldsRecords(recs)
		if err != nil {
			return nil, err
		}
		create = !held
	}
	db, err := persistence.Open(ctx, s.DBTarget, create, s.dbOptions(recs)...)
	if err != nil {
		if werr := s.Layout.CheckWritable(); werr != nil {
			return nil, werr
		}
		return nil, err
	}
	res.add(db.Close)
	if s.Created {
		host, _ := os.Hostname()
		if err := db.RegisterWorkspace(ctx, persistence.WorkspaceInfo{ID: db.WorkspaceID(), Root: s.Layout.Root, Host: host, CreatedAt: time.Now().UTC()}); err != nil {
			return nil, fmt.Errorf("register the workspace: %w", err)
		}
	}
	if cfg.Init && s.Shared() {
		if err := s.describe(recs.Backend()); err != nil {
			return nil, err
		}
	}
	return db, nil
}

// StoreModule provides the object store and the records of the database's history kept in it.
var StoreModule = fx.Module("objectstore", fx.Provide(newStore))

func newStore(res *resources, s *Setup, cfg Config) (*objectstore.Store, *objectstore.Records, error) {
	defer timing.Span("open.store")()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, recs, err := s.OpenStore(ctx, cfg.Init)
	if err != nil {
		return nil, nil, err
	}
	res.add(func() error {
		err := st.Close()
		closeBackend(st.Backend())
		return err
	})
	return st, recs, nil
}

// WorkspaceModule provides the filesystem adapters.
var WorkspaceModule = fx.Module("workspace", fx.Provide(workspaceProviders()...))

func workspaceProviders() []any {
	return []any{
		newScanner,
		newRestorer,
		newSnapshotter,
		func(s *watch.Snapshotter) port.Snapshotter { return s },
		func(r *workspace.Restorer) port.Restorer { return r },
		func(s *objectstore.Store) port.Exporter { return workspace.NewExporter(s) },
		func(l workspace.Layout) port.Journal { return workspace.NewJournal(l) },
		func(l workspace.Layout, cfg Config) *workspace.Locker {
			lk := workspace.NewLocker(l)
			if cfg.LockWait > 0 {
				lk.Wait = cfg.LockWait
			}
			return lk
		},
		func(l *workspace.Locker, s *objectstore.Store) port.Locker { return NewStoreLocker(l, s) },
		func(l workspace.Layout) port.GitProbe { return workspace.NewGitHead(l) },
		func(s *objectstore.Store) port.TreeStore { return s },
		func(s *objectstore.Store) port.TreeWriter { return s },
		func(l workspace.Layout) port.Executor { return executor.NewShell(l) },
		func(l workspace.Layout, s *objectstore.Store) port.Archiver { return archive.New(l, s) },
		func(s *Setup, st *objectstore.Store, r *objectstore.Records, d *persistence.DB) (port.StoreHealth, error) {
			return newHealth(s, st, r, d)
		},
		func(l workspace.Layout) port.Settings { return maintenance.NewSettings(l) },
		func(l workspace.Layout, s *objectstore.Store) port.StoreHealer { return maintenance.NewHealer(l, s) },
	}
}

// ApplicationModule provides the use cases. Every service depends on the shared core
// (application.Operations), whose constructor wires all of crash recovery, so a host that asks for
// one service alone still gets complete recovery; nothing here needs an fx.Invoke.
var ApplicationModule = fx.Module("application", fx.Provide(append(kernelProviders(), serviceProviders()...)...))

// kernelProviders are what the services share: the clock, the guard and the shared core.
func kernelProviders() []any {
	return []any{func() port.Clock { return systemClock{} }, NewOperations}
}

// serviceProviders are the use cases, what a host's graph sees of plan.
func serviceProviders() []any {
	return []any{
		application.NewCheckpointService,
		NewPlanService,
		application.NewCorrectionService,
		application.NewHistoryService,
		application.NewReadService,
		application.NewAgentService,
		NewMaintenanceService,
	}
}

// walkOnly says the user turned the change tracking off (PLAN_WATCH=0): every snapshot walks.
func (s *Setup) walkOnly() bool { return s.getenv("PLAN_WATCH") == "0" }

func newScanner(l workspace.Layout, store *objectstore.Store, s *Setup) *workspace.Scanner {
	sc := workspace.NewScanner(l, store)
	if s.walkOnly() {
		sc.TrackOff("PLAN_WATCH=0")
	}
	return sc
}

func newSnapshotter(sc *workspace.Scanner, l workspace.Layout, store *objectstore.Store, s *Setup) *watch.Snapshotter {
	sn := watch.NewSnapshotter(sc, l, store)
	sn.WalkOnly(s.walkOnly())
	return sn
}

// newHealth is the store's health adapter, with the gc grace period the configuration sets.
func newHealth(s *Setup, store *objectstore.Store, recs *objectstore.Records, db *persistence.DB) (*maintenance.Health, error) {
	h := maintenance.NewHealth(store, recs).WithDatabase(db)
	if s.File.GC != nil && s.File.GC.Grace != "" {
		d, err := time.ParseDuration(s.File.GC.Grace)
		if err != nil || d < 0 {
			return nil, fault.Invalid("%s: gc.grace %q: want a duration such as 1h or 10m", config.Path(s.Layout.State()), s.File.GC.Grace)
		}
		h.WithGrace(d)
	}
	return h, nil
}

// OperationsIn is what the shared core needs from the graph.
type OperationsIn struct {
	fx.In
	Checkpoints checkpoint.Repository
	Plans       plan.Repository
	Corrections correction.Repository
	Snapshotter port.Snapshotter
	Store       port.TreeStore
	Locker      port.Locker
	Journal     port.Journal
	Restorer    port.Restorer
	Tx          port.Transactor
	History     port.History
	Clock       port.Clock
	Git         port.GitProbe
	Metrics     port.Metrics
	Executor    port.Executor
	Archiver    port.Archiver
	Trees       port.TreeWriter
	Log         port.OperationLog
	Config      Config
}

// NewOperations builds the shared core from the graph.
func NewOperations(in OperationsIn) *application.Operations {
	return application.NewOperations(application.OperationsParams{
		Checkpoints: in.Checkpoints, Plans: in.Plans, Corrections: in.Corrections, Snapshotter: in.Snapshotter,
		Store: in.Store, Locker: in.Locker, Journal: in.Journal, Restorer: in.Restorer,
		// The release binary's crash hooks: no-ops unless PLAN_FAILPOINT arms one.
		Failpoint: failpoint.Hit, Tx: in.Tx, History: in.History, Clock: in.Clock, Git: in.Git,
		Metrics: in.Metrics, Executor: in.Executor, Archiver: in.Archiver, Trees: in.Trees, Log: in.Log,
		Host: hostName(in.Config.Host),
	})
}

// hostName is the host program's name as Go-function decisions record it.
func hostName(host string) string {
	if host != "" {
		return host
	}
	return filepath.Base(os.Args[0])
}

// NewPlanService builds the plan use cases and registers the configuration's Go functions.
func NewPlanService(ops *application.Operations, cfg Config) (*application.PlanService, error) {
	s := application.NewPlanService(ops)
	for _, name := range slices.Sorted(maps.Keys(cfg.Funcs)) {
		if err := s.Register(name, cfg.Funcs[name]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewMaintenanceService builds the maintenance use cases from the graph.
func NewMaintenanceService(ops *application.Operations, store port.StoreHealth, settings port.Settings, log port.OperationLog, healer port.StoreHealer) *application.MaintenanceService {
	return application.NewMaintenanceService(application.MaintenanceParams{Ops: ops, Store: store, Settings: settings, Log: log, Healer: healer})
}

// StoreLocker is the workspace lock as the use cases see it: taking it also brings the object
// store's index up to date. The store is opened before the lock is taken, so without this a command
// could deduplicate onto a pack that a GC deleted while it waited for the lock.
type StoreLocker struct {
	lock  *workspace.Locker
	store *objectstore.Store
}

// NewStoreLocker returns the lock of the workspace whose store is s.
func NewStoreLocker(l *workspace.Locker, s *objectstore.Store) *StoreLocker {
	return &StoreLocker{lock: l, store: s}
}

// Lock takes the workspace lock, then refreshes the store's index.
func (l *StoreLocker) Lock(ctx context.Context, purpose string) (func() error, error) {
	defer timing.Span("lock")()
	unlock, err := l.lock.Lock(ctx, purpose)
	if err != nil {
		return nil, err
	}
	return l.refreshed(unlock, l.store.Refresh)
}

// TryLock takes the lock only if it is free now, then settles the store: read-only commands take
// it this way to run the database's repairs, and read no object under it, so an index the store
// has not read yet is left to its first use (objectstore.Store.Settle).
func (l *StoreLocker) TryLock(purpose string) (func() error, bool, error) {
	defer timing.Span("lock")()
	unlock, ok, err := l.lock.TryLock(purpose)
	if err != nil || !ok {
		return nil, ok, err
	}
	unlock, err = l.refreshed(unlock, l.store.Settle)
	return unlock, err == nil, err
}

func (l *StoreLocker) refreshed(unlock, refresh func() error) (func() error, error) {
	if err := refresh(); err != nil {
		return nil, errors.Join(fmt.Errorf("read the object store: %w", err), unlock())
	}
	return unlock, nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// Services are what the CLI (or a host program) uses.
type Services struct {
	fx.In
	Setup       *Setup
	Layout      workspace.Layout
	Checkpoints *application.CheckpointService
	Plans       *application.PlanService
	Corrections *application.CorrectionService
	Maintenance *application.MaintenanceService
	History     *application.HistoryService
	Read        *application.ReadService
	Agents      *application.AgentService
}

// App is the use cases Services holds.
func (s Services) App() application.App {
	return application.App{
		Checkpoints: s.Checkpoints, Plans: s.Plans, Corrections: s.Corrections, Maintenance: s.Maintenance,
		History: s.History, Read: s.Read, Agents: s.Agents,
	}
}

// adapters are the parts of the graph that App's own methods use (edge.go), kept out of Services
// so that nothing outside infrastructure/ reaches the database, the store or the watch client.
type adapters struct {
	fx.In
	DB    *persistence.DB
	Store *objectstore.Store
	Watch *watch.Snapshotter
}

// App is a started plan application for one workspace.
type App struct {
	fx        *fx.App
	Services  Services
	internals adapters
}

// Open builds and starts the application for cfg. When it fails, everything it opened is closed,
// and a .plan/ that this Open made (cfg.Init in a directory that had none) is removed again: a
// refused or failed init leaves no half-made workspace behind.
func Open(ctx context.Context, cfg Config) (*App, error) {
	state := ""
	if cfg.Init {
		if l, err := workspace.NewLayout(cfg.Root); err == nil {
			if _, err := os.Lstat(l.State()); errors.Is(err, fs.ErrNotExist) {
				state = l.State()
			}
		}
	}
	defer timing.Span("open")()
	made := &madeDirs{}
	cfg.made = made
	a := &App{}
	res := &resources{}
	a.fx = fx.New(Wiring(cfg),
		// Open keeps its own handle on the resources so it can close them if the graph fails;
		// replacing the module's instance skips its constructor, so the stop hook is added here.
		fx.Replace(res),
		fx.Invoke(func(lc fx.Lifecycle) { lc.Append(fx.StopHook(res.close)) }),
		fx.Populate(&a.Services, &a.internals), fx.NopLogger)
	err := a.fx.Err()
	if err == nil {
		err = a.fx.Start(ctx)
	}
	if err != nil {
		err = failed(rootCause(err), res)
		if state != "" {
			_ = os.RemoveAll(state)
			made.takeBack()
		}
		return nil, err
	}
	return a, nil
}

// failed closes what a failed Open opened and returns its error (joined with a close error only
// when there is one, so the caller still sees the original error as is).
func failed(err error, res *resources) error {
	if cerr := res.close(); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// Close stops the application, closing the store and the database.
func (a *App) Close() error {
	defer timing.Span("close")()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.fx.Stop(ctx)
}

// rootCause strips fx's dependency-graph wrapping when a constructor failed with a classified error,
// so callers see that error (and its exit code); fx's wording adds nothing a user can act on.
func rootCause(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	// The error a constructor returned, without the graph's wording ("could not build arguments
	// for function …"): one line that names the file and the cause.
	return dig.RootCause(err)
}
