// Command fx embeds plan in an uber-go/fx app: first one workspace with plan.Module, whose services
// the host's own component receives like any other dependency; then two workspaces in one app with
// plan.Scoped, each exporting only its *plan.Workspace, asked for by name. `make examples` runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"go.uber.org/fx"

	"github.com/planhq/plan"
)

// agent is the host's component: it gets plan's services from the graph.
type agent struct{ plans *plan.PlanService }

func newAgent(plans *plan.PlanService) *agent { return &agent{plans: plans} }

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	one, err := os.MkdirTemp("", "plan-fx-")
	if err != nil {
		return err
	}
	var a *agent
	app := fx.New(plan.Module(plan.Config{Root: one, Init: true}), fx.Provide(newAgent), fx.Populate(&a), fx.NopLogger)
	if err := app.Start(ctx); err != nil {
		return err
	}
	res, err := a.plans.Exec(ctx, plan.ExecRequest{Command: "echo one > one.txt"})
	if err = errors.Join(err, app.Stop(ctx)); err != nil {
		return err
	}
	fmt.Printf("plan.Module: workspace %s ran decision %s\n", one, res.Ran[0])

	docs, err := os.MkdirTemp("", "plan-fx-docs-")
	if err != nil {
		return err
	}
	site, err := os.MkdirTemp("", "plan-fx-site-")
	if err != nil {
		return err
	}
	var ws [2]*plan.Workspace
	app = fx.New(
		plan.Scoped("docs", plan.Config{Root: docs, Init: true}),
		plan.Scoped("site", plan.Config{Root: site, Init: true}),
		fx.Invoke(fx.Annotate(func(d, s *plan.Workspace) { ws = [2]*plan.Workspace{d, s} },
			fx.ParamTags(`name:"docs"`, `name:"site"`))),
		fx.NopLogger,
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	for _, w := range ws {
		if _, err := w.Plans.Exec(ctx, plan.ExecRequest{ID: "hello", Command: "echo " + w.Name + " > hello.txt"}); err != nil {
			return errors.Join(err, app.Stop(ctx))
		}
		ops, err := w.History.List(ctx, 0, "")
		if err != nil || len(ops) != 2 {
			return errors.Join(fmt.Errorf("%s's operation log: %v %w", w.Name, ops, err), app.Stop(ctx))
		}
		fmt.Printf("plan.Scoped %q: workspace %s ran decision hello; its log has %d entries\n", w.Name, w.Root, len(ops))
	}
	return app.Stop(ctx)
}
