package bootstrap

import (
	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/archive"
	"github.com/planhq/plan/infrastructure/executor"
	"github.com/planhq/plan/infrastructure/maintenance"
	"github.com/planhq/plan/infrastructure/persistence"
	"github.com/planhq/plan/infrastructure/watch"
	"github.com/planhq/plan/infrastructure/workspace"
)

// wire builds, by hand, the Services that Module's graph gives, from the same constructors (the
// providers of PersistenceModule, StoreModule, WorkspaceModule and ApplicationModule), in the
// order fx builds them for Services. Open uses it: a command opens one workspace per process, and
// fx's reflection over some forty constructors (dig's scopes, parameter and result analysis) was
// 1.5-2 ms of every command, a fifth of a read-only one's budget. Hosts keep Module and Scoped,
// where a graph they extend is the point. TestWireMatchesModule keeps the two alike: every field of
// Services, and what the services hold, down to the adapters, is of the same type either way.
//
// What it opened is added to res, which the caller closes on failure and at Close.
func wire(cfg Config, res *resources) (Services, error) {
	s, err := Resolve(cfg)
	if err != nil {
		return Services{}, err
	}
	l := layoutOf(s)
	store, recs, err := newStore(res, s, cfg)
	if err != nil {
		return Services{}, err
	}
	db, err := newDB(res, s, cfg, recs)
	if err != nil {
		return Services{}, err
	}

	scanner := workspace.NewScanner(l, store)
	snap := watch.NewSnapshotter(scanner, l, store)
	restorer := newRestorer(l, store, scanner, snap)
	locker := workspace.NewLocker(l)
	if cfg.LockWait > 0 {
		locker.Wait = cfg.LockWait
	}
	guard := NewGuard(NewStoreLocker(locker, store), workspace.NewJournal(l), restorer)
	oplog := persistence.NewOperationLog(db)
	ops := NewOperations(OperationsIn{
		Checkpoints: persistence.NewCheckpoints(db),
		Plans:       persistence.NewPlans(db),
		Corrections: persistence.NewCorrections(db),
		Snapshotter: snap,
		Store:       store,
		Guard:       guard,
		Tx:          persistence.NewTransactor(db),
		History:     persistence.NewHistory(db),
		Clock:       systemClock{},
		Git:         workspace.NewGitHead(l),
		Metrics:     persistence.NewMetrics(db),
		Executor:    executor.NewShell(l),
		Archiver:    archive.New(l, store),
		Trees:       store,
		Log:         oplog,
		Config:      cfg,
	})
	plans, err := NewPlanService(ops, cfg)
	if err != nil {
		return Services{}, err
	}
	health, err := newHealth(s, store, recs, db)
	if err != nil {
		return Services{}, err
	}
	return Services{
		Setup:       s,
		Layout:      l,
		Checkpoints: application.NewCheckpointService(ops),
		Plans:       plans,
		Corrections: application.NewCorrectionService(ops),
		Maintenance: NewMaintenanceService(ops, health, maintenance.NewSettings(l), oplog),
		History:     application.NewHistoryService(ops, oplog),
		Read:        application.NewReadService(ops, workspace.NewExporter(store)),
		Agents:      application.NewAgentService(ops),
		Guard:       guard,
		DB:          db,
		Store:       store,
		Watch:       snap,
	}, nil
}
