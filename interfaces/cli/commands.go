package cli

import (
	"context"
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/workspace"
)

// commands lists every command, one group per file: init here, checkpoints, diff, rollback and
// recovery, plans, corrections, maintenance, and the demo.
func (h *handler) commands() []*ucli.Command {
	cmds := []*ucli.Command{{
		Name: "init", Usage: "create .plan/ in the workspace (idempotent)",
		Action: h.initCmd,
	}}
	cmds = append(cmds, h.checkpointCommands()...)
	cmds = append(cmds, h.diffCommand())
	cmds = append(cmds, h.restoreCommands()...)
	cmds = append(cmds, h.planCommands()...)
	cmds = append(cmds, h.correctionCommands()...)
	cmds = append(cmds, h.revertCommand())
	cmds = append(cmds, h.maintenanceCommands()...)
	cmds = append(cmds, h.historyCommands()...)
	cmds = append(cmds, h.shellCommands()...)
	return append(cmds, h.demoCommand())
}

func (h *handler) initCmd(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	ctx := c.Context
	var v initView
	return h.withInit(ctx, func(app *bootstrap.App, created bool) error {
		l := app.Services.Layout
		v = initView{Workspace: l.Root, StateDir: l.State(), Created: created}
		return h.emit(v, func(w io.Writer) {
			if created {
				_, _ = fmt.Fprintf(w, "Initialised plan workspace in %s\n", l.Root)
			} else {
				_, _ = fmt.Fprintf(w, "plan workspace %s is already initialised\n", l.Root)
			}
		})
	})
}

// withInit opens the workspace, creating .plan/ when needed, and tells fn whether it did.
func (h *handler) withInit(ctx context.Context, fn func(app *bootstrap.App, created bool) error) error {
	l, err := workspace.NewLayout(h.root)
	if err != nil {
		return err
	}
	created := !l.Initialized()
	return h.with(ctx, true, func(app *bootstrap.App) error { return fn(app, created) })
}
