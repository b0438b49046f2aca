package bootstrap

import (
	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// Workspace is one workspace's services, as Scoped exports them.
type Workspace = application.Workspace

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
	providers = append(providers, kernelProviders()...)
	providers = append(providers, serviceProviders()...)
	providers = append(providers, fx.Private)
	return fx.Module("plan-"+name,
		fx.Provide(providers...),
		fx.Provide(fx.Annotate(func(s Services) *Workspace {
			return &Workspace{Name: name, Root: s.Layout.Root, App: s.App()}
		}, fx.ResultTags(`name:"`+name+`"`))),
	)
}
