package bootstrap

import (
	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// Workspace is one workspace's services, as Scoped exports them: all a host needs to work on it,
// and nothing of the adapters behind them.
type Workspace struct {
	// Name is the name Scoped gave the workspace; Root its directory.
	Name, Root  string
	Checkpoints *application.CheckpointService
	Plans       *application.PlanService
	Corrections *application.CorrectionService
	History     *application.HistoryService
	Maintenance *application.MaintenanceService
	Read        *application.ReadService
}

var scopeName = ident.NewPattern("A-Za-z0-9_-", "A-Za-z0-9_-", 64) // ^[A-Za-z0-9_-]{1,64}$

// Scoped is Module for one of several workspaces in one fx app: every adapter and service stays
// private to the module, and the app sees one value only, the *Workspace named name
// (`name:"NAME"`). A host adds one Scoped module per workspace and asks for each by its name:
//
//	fx.New(
//		bootstrap.Scoped("docs", bootstrap.Config{Root: docsDir, Init: true}),
//		bootstrap.Scoped("site", bootstrap.Config{Root: siteDir, Init: true}),
//		fx.Invoke(fx.Annotate(func(docs, site *bootstrap.Workspace) { … },
//			fx.ParamTags(`name:"docs"`, `name:"site"`))),
//	)
//
// name is 1 to 64 letters, digits, "_" or "-". Stopping the app closes every workspace's database
// and store.
func Scoped(name string, cfg Config) fx.Option {
	if !scopeName.Match(name) {
		return fx.Error(fault.Invalid("bootstrap.Scoped: workspace name %q must be 1 to 64 letters, digits, _ or -", name))
	}
	providers := []any{func() Config { return cfg }, Resolve, layoutOf, newResources, newStore}
	providers = append(providers, persistenceProviders()...)
	providers = append(providers, workspaceProviders()...)
	providers = append(providers, applicationProviders()...)
	providers = append(providers, fx.Private)
	return fx.Module("plan-"+name,
		fx.Provide(providers...),
		fx.Provide(fx.Annotate(func(s Services) *Workspace {
			return &Workspace{
				Name: name, Root: s.Layout.Root, Checkpoints: s.Checkpoints, Plans: s.Plans, Corrections: s.Corrections,
				History: s.History, Maintenance: s.Maintenance, Read: s.Read,
			}
		}, fx.ResultTags(`name:"`+name+`"`))),
	)
}
