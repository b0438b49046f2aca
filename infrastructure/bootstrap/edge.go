package bootstrap

import (
	"context"
	"io"
	"time"

	"github.com/planhq/plan/infrastructure/internal/agents"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/planfile"
	"github.com/planhq/plan/infrastructure/internal/timing"
	"github.com/planhq/plan/infrastructure/internal/watch"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// The CLI's edge: what a command needs before, beside or without a workspace's graph (finding the
// workspace, its configuration, the change-tracking service's lifecycle, the agents' settings
// files, doctor on a database that cannot open). The adapters are internal to infrastructure/, so
// this file is the one place that decides what of them the interfaces see; a host embedding plan
// sees none of it (package plan exports the services only).

// Layout is where a workspace keeps its files (the root and the .plan state directory).
type Layout = workspace.Layout

// NewLayout returns the layout of the workspace rooted at root.
func NewLayout(root string) (Layout, error) { return LayoutAt(root) }

// Discover finds the workspace holding dir: dir or its nearest ancestor with a state directory,
// stopping at the ceiling directories (PLAN_CEILING_DIRECTORIES). found is false when none is.
func Discover(dir string, ceilings []string) (root string, found bool, err error) {
	return workspace.Discover(dir, ceilings)
}

// ConfigFile is a workspace's configuration (.plan/config.yaml).
type ConfigFile = config.File

// LoadConfig reads the configuration in the state directory state (the defaults when there is none).
func LoadConfig(state string) (ConfigFile, error) { return config.Load(config.Path(state)) }

// DSNHasPassword says whether a database DSN carries a password (which plan init refuses to keep).
func DSNHasPassword(dsn string) bool { return config.HasPassword(dsn) }

// PlanFile is a parsed plan file.
type PlanFile = planfile.File

// LoadPlanFile reads and validates the plan file at path.
func LoadPlanFile(path string) (PlanFile, error) { return planfile.Load(path) }

// Unreadable lists, sorted, the paths of the workspace laid out by l that a checkpoint could not
// read (permission denied): a walk as a checkpoint's, storing nothing.
func Unreadable(ctx context.Context, l Layout) ([]string, error) {
	_, paths, err := workspace.NewScanner(l, nil).ScanReadable(ctx, nil)
	return paths, err
}

// UnreadableWarning is the warning that names paths a checkpoint could not read.
func UnreadableWarning(paths []string) string { return workspace.UnreadableWarning(paths) }

// ReplaceFile writes b to path atomically and durably (a temporary file, fsync, rename, fsync of
// the directory); private makes it readable by the owner only.
func ReplaceFile(path string, b []byte, private bool) error { return fsx.Replace(path, b, private) }

// StartTimings turns on the measurement of a command's phases when PLAN_TIMINGS (read through
// getenv) asks for it, and returns what writes them to w once the command has ended.
func StartTimings(getenv func(string) string, w io.Writer) (report func()) {
	if v := getenv(timing.EnvVar); v == "" || v == "0" {
		return func() {}
	}
	timing.Enable(true)
	end := timing.Span("total")
	return func() {
		end()
		_ = timing.Write(w)
		timing.Enable(false)
	}
}

// Span measures one phase of the command (PLAN_TIMINGS); call the result when the phase ends.
func Span(name string) (end func()) { return timing.Span(name) }

// The change-tracking service (plan watch).
type (
	// WatchOptions are the service's settings and the callbacks it checkpoints and merges with.
	WatchOptions = watch.Options
	// WatchStatus is what a running service reports (plan watch status).
	WatchStatus = watch.Status
)

// ErrWatchNotRunning is WatchQuery's error when no service runs for the workspace.
var ErrWatchNotRunning = watch.ErrNotRunning

// WatchSupported says whether this system can watch a workspace for changes.
func WatchSupported() bool { return watch.Supported() }

// WatchQuery asks the service of workspace l for its status.
func WatchQuery(ctx context.Context, l Layout) (WatchStatus, error) { return watch.Query(ctx, l) }

// WatchStop stops the service of workspace l, waiting up to wait; was says one was running.
func WatchStop(ctx context.Context, l Layout, wait time.Duration) (was bool, err error) {
	return watch.Stop(ctx, l, wait)
}

// WatchSocket is the socket the service of workspace l answers on.
func WatchSocket(l Layout) string { return watch.SocketPath(l) }

// ServeWatch runs the workspace's change-tracking service until ctx ends or it is stopped.
func (a *App) ServeWatch(ctx context.Context, opts WatchOptions) error {
	return watch.Serve(ctx, a.internals.Watch, a.internals.Store, opts)
}

// WatchServed says whether a running service answered this command's snapshots.
func (a *App) WatchServed() bool { return a.internals.Watch.Served() }

// The agents' settings files (plan agent install, uninstall, status).
type (
	// Agent is one coding agent plan can hook into.
	Agent = agents.Agent
	// AgentScope is which settings file: the project's or the user's.
	AgentScope = agents.Scope
	// AgentStatus is what one settings file holds of plan's hooks.
	AgentStatus = agents.Status
)

// The scopes of an agent's settings.
const (
	AgentProject = agents.Project
	AgentUser    = agents.User
)

// AgentNames are the agents plan knows, in a fixed order.
func AgentNames() []string { return agents.Names() }

// LookupAgent returns the agent named name.
func LookupAgent(name string) (Agent, error) { return agents.Lookup(name) }

// Doctor, rebuild and repair of the store.
type (
	// DoctorReport is what plan doctor found (and repaired).
	DoctorReport = maintenance.Report
	// RebuildResult is what plan doctor --rebuild did.
	RebuildResult = maintenance.RebuildResult
)

// Doctor checks the workspace s describes without its application graph, repairing what it safely
// can when repair is set.
func (s *Setup) Doctor(ctx context.Context, repair bool) DoctorReport {
	return maintenance.Doctor(ctx, s.Target(), repair)
}

// Rebuild makes the metadata database again from the store's records when it is missing, empty,
// incomplete or damaged; a healthy database is left alone.
func (s *Setup) Rebuild(ctx context.Context, now time.Time) (RebuildResult, error) {
	return maintenance.Rebuild(ctx, s.Target(), now)
}

// DatabaseShown names the database as messages show it (a path, or a DSN without its password).
func (s *Setup) DatabaseShown() string { return s.Target().Shown() }

// StoreLocation is where the store's content is read from (a directory or a bucket URL).
func (a *App) StoreLocation() string { return a.internals.Store.Backend().Location("") }

// StoreChecksLocalCopies says whether the store keeps a local cache whose copies verify checks
// against the bucket rather than reading them.
func (a *App) StoreChecksLocalCopies() bool { return a.internals.Store.ChecksLocalCopies() }

// WorkspaceID is the workspace's identity.
func (a *App) WorkspaceID() string { return a.internals.DB.WorkspaceID() }
