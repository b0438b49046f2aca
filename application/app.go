package application

import "github.com/planhq/plan/application/internal/kernel"

// App is the use cases of one workspace: the one value the CLI and a host program both work
// through (the composition root builds it; package plan hands it to hosts as App.Services).
type App struct {
	Checkpoints *CheckpointService
	Plans       *PlanService
	Corrections *CorrectionService
	History     *HistoryService
	Maintenance *MaintenanceService
	Read        *ReadService
	Agents      *AgentService
}

// Workspace is one named workspace's use cases, as a host with several gets them
// (bootstrap.Scoped): all a host needs to work on it, and nothing of the adapters behind them.
type Workspace struct {
	// Name is the name the host gave the workspace; Root its directory.
	Name, Root string
	App
}

// RecoverResult is what recovering an interrupted operation did (the kernel's guard reports it).
type RecoverResult = kernel.RecoverResult
