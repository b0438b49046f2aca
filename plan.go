// Package plan is the front door for a Go program that embeds plan: it opens a workspace (Open, or
// Module / Scoped in an uber-go/fx app) and names the services and requests a host uses, as
// aliases of the types in application/ (docs/embedding.md).
//
//	app, err := plan.Open(ctx, plan.Config{Root: dir, Init: true})
//	…
//	defer app.Close()
//	res, err := app.Services.Plans.Exec(ctx, plan.ExecRequest{ID: "notes", Func: plan.Func(writeNotes)})
//
// Invariants: no type of infrastructure/ is reachable from this package's exported API (the
// adapters stay behind the composition root; embed_api_test.go walks the API to keep it so); every
// operation a host runs through these services is in the workspace's operation log (`plan
// history`, `plan undo`) exactly as the CLI's are.
package plan

import (
	"context"

	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	domplan "github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// The workspace and how it is opened.
type (
	// Config selects (and, with Init, creates) the workspace: the composition root's
	// configuration, field for field (see bootstrap.Config for each field).
	Config bootstrap.Config
	// Services are an opened workspace's use cases.
	Services = application.App
	// Workspace is one workspace's services, as Scoped exports them.
	Workspace = application.Workspace
)

// App is an opened workspace; App.Services are its services. Close it when done.
type App struct {
	Services Services
	close    func() error
}

// Close stops the workspace's services, closing its store and database. An App that Open did not
// return has nothing to close.
func (a *App) Close() error {
	if a.close == nil {
		return nil
	}
	return a.close()
}

// The services, as App.Services and Workspace name them. The names are those of package
// application, so code moves between the two import paths unchanged.
type (
	// PlanService runs plans and single decisions (shell commands or Go functions).
	PlanService = application.PlanService //nolint:revive // the name application gives it
	// CheckpointService creates, diffs, rolls back to and deletes checkpoints.
	CheckpointService = application.CheckpointService
	// CorrectionService corrects decisions: revert, archive, re-execute; or a surgical revert.
	CorrectionService = application.CorrectionService
	// HistoryService lists the operation log and undoes operations from it.
	HistoryService = application.HistoryService
	// MaintenanceService prunes, collects garbage, verifies and counts.
	MaintenanceService = application.MaintenanceService
	// ReadService reads checkpoints without restoring them.
	ReadService = application.ReadService
	// AgentService records AI coding agents' sessions from their hooks (Services.Agents).
	AgentService = application.AgentService
)

// Decisions as Go functions.
type (
	// DecisionFunc is a decision the host implements in Go.
	DecisionFunc = port.DecisionFunc
	// DecisionCall is the decision a DecisionFunc runs.
	DecisionCall = port.DecisionCall
	// Func adapts a plain function to DecisionFunc.
	Func = port.Func
	// Definition is one decision of a plan (RunRequest.Decisions); its Run is a shell command, or
	// "go-func:NAME" for the Go function registered (or passed in RunRequest.Funcs) as NAME.
	Definition = domplan.Definition
)

// Requests and results of the services' calls.
type (
	// ExecRequest asks PlanService.Exec for one decision.
	ExecRequest = application.ExecRequest
	// RunRequest asks PlanService.Run for a plan's decisions.
	RunRequest = application.RunRequest
	// RunResult is the plan after a run or an exec.
	RunResult = application.RunResult
	// Event narrates a run (RunRequest.Events).
	Event = application.Event
	// CreateRequest asks CheckpointService.Create for a checkpoint.
	CreateRequest = application.CreateRequest
	// RollbackRequest asks CheckpointService.Rollback to go back to a checkpoint.
	RollbackRequest = application.RollbackRequest
	// RollbackResult is what a rollback did.
	RollbackResult = application.RollbackResult
	// CorrectRequest asks CorrectionService.Correct to correct a decision.
	CorrectRequest = application.CorrectRequest
	// CorrectResult is what a correction did.
	CorrectResult = application.CorrectResult
	// RevertRequest asks CorrectionService.RevertDecision to revert one decision alone.
	RevertRequest = application.RevertRequest
	// RevertResult is what a surgical revert did.
	RevertResult = application.RevertResult
	// UndoRequest asks HistoryService.Undo to undo the latest undoable operation.
	UndoRequest = application.UndoRequest
	// UndoResult is what an undo did.
	UndoResult = application.UndoResult
	// LoggedOperation is one entry of the operation log.
	LoggedOperation = port.LoggedOperation
)

// Open opens (with Init, creates) the workspace cfg names and starts its services: the simplest
// route. Close the App when done.
func Open(ctx context.Context, cfg Config) (*App, error) {
	a, err := bootstrap.Open(ctx, bootstrap.Config(cfg))
	if err != nil {
		return nil, err
	}
	return &App{Services: a.Services.App(), close: a.Close}, nil
}

// Module adds one workspace to a host's fx app, sealed: the app sees its services
// (*CheckpointService, *PlanService, …) and nothing of the adapters behind them (bootstrap.Module).
func Module(cfg Config) fx.Option { return bootstrap.Module(bootstrap.Config(cfg)) }

// Scoped adds one of several workspaces to a host's fx app, exporting only its *Workspace, named
// name (see bootstrap.Scoped).
func Scoped(name string, cfg Config) fx.Option { return bootstrap.Scoped(name, bootstrap.Config(cfg)) }
