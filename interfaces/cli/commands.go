package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// commands lists every command, one group per file: init here, checkpoints, diff, rollback and
// recovery, plans, corrections, maintenance, and the demo.
func (h *handler) commands() []*ucli.Command {
	cmds := []*ucli.Command{{
		Name: "init", Usage: "create .plan/ in the workspace (idempotent)",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "store", Usage: "keep content in a shared store: `URL` file:///abs/path or s3://bucket[/prefix] (endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION); `workspace` keeps the whole state in .plan/, where `git clean -fdx` or `rm -rf .plan` destroys it (default: the per-user data directory, PLAN_DATA_DIR)"},
			&ucli.StringFlag{Name: "db", Usage: "keep metadata in `DSN` sqlite:///abs/path or postgres://user@host:port/database (the password from PGPASSWORD or ~/.pgpass; never recorded)"},
			&ucli.BoolFlag{Name: "nested", Usage: "make a workspace inside another one (refused otherwise)"},
			&ucli.BoolFlag{Name: "new", Usage: "start a new, unrelated history even where the data directory keeps this directory's (instead of re-attaching it)"},
		},
		Action: h.initCmd,
	}}
	cmds = append(cmds, h.checkpointCommands()...)
	cmds = append(cmds, h.diffCommand())
	cmds = append(cmds, h.readCommands()...)
	cmds = append(cmds, h.restoreCommands()...)
	cmds = append(cmds, h.planCommands()...)
	cmds = append(cmds, h.correctionCommands()...)
	cmds = append(cmds, h.revertCommand())
	cmds = append(cmds, h.maintenanceCommands()...)
	cmds = append(cmds, h.historyCommands()...)
	cmds = append(cmds, h.browseCommand())
	cmds = append(cmds, h.undoCommands()...)
	cmds = append(cmds, h.sharedCommands()...)
	cmds = append(cmds, h.storeCommand())
	cmds = append(cmds, h.shellCommands()...)
	cmds = append(cmds, h.helpCommand())
	cmds = append(cmds, h.mcpCommand())
	cmds = append(cmds, h.agentCommands()...)
	cmds = append(cmds, h.agentInstallCommands())
	cmds = append(cmds, h.watchCommand())
	return append(cmds, h.demoCommand())
}

func (h *handler) initCmd(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	ctx := c.Context
	// init makes a workspace of the directory it is run in; inside another workspace that would
	// nest one, whose files the outer one would also take in: say so instead.
	if outer, err := h.workspaceRoot(); err == nil && inside(outer, h.root) && !c.Bool("nested") {
		return fault.Conflict("%s is inside the workspace %s: a workspace here would nest in it (its files are already "+
			"checkpointed there); run plan commands from here as they are, or pass --nested to make one anyway", h.root, outer)
	}
	h.exactRoot = true
	h.fresh.store, h.fresh.db, h.fresh.newHistory = c.String("store"), c.String("db"), c.Bool("new")
	h.noNotice = true // init says itself what it found
	var v initView
	return h.withInit(ctx, func(app *bootstrap.App, created bool) error {
		s := app.Services.Setup
		l := s.Layout
		v = initView{Workspace: l.Root, StateDir: l.State(), HistoryDir: l.Home(), Outside: l.Outside(), Created: created,
			Reattached: s.Reattached, WorkspaceID: app.WorkspaceID(), Store: s.File.Store, DB: s.File.DB}
		return h.emit(v, func(w io.Writer) {
			switch {
			case s.Reattached:
				_, _ = fmt.Fprintf(w, "Re-attached %s to its history (workspace %s)\n", quote(l.Root), quote(v.WorkspaceID))
			case created:
				_, _ = fmt.Fprintf(w, "Initialised plan workspace in %s (workspace %s)\n", quote(l.Root), quote(v.WorkspaceID))
			default:
				_, _ = fmt.Fprintf(w, "plan workspace %s (%s) is already initialised\n", quote(l.Root), quote(v.WorkspaceID))
			}
			if v.Outside {
				_, _ = fmt.Fprintf(w, "history: %s (outside the workspace)\n", quote(v.HistoryDir))
			} else {
				_, _ = fmt.Fprintf(w, "history: %s (inside the workspace: `git clean -fdx` or `rm -rf .plan` destroys it; `plan store move-out` moves it out)\n", quote(v.HistoryDir))
			}
			if v.Store != "" {
				_, _ = fmt.Fprintf(w, "store: %s\n", quote(v.Store))
			}
			if v.DB != "" {
				_, _ = fmt.Fprintf(w, "database: %s\n", quote(v.DB))
			}
			if created && bootstrap.DSNHasPassword(c.String("db")) {
				_, _ = fmt.Fprintln(w, "note: the database password was not recorded; later commands read it from PGPASSWORD, PGPASSFILE or ~/.pgpass")
			}
		})
	})
}

// withInit opens the workspace, creating .plan/ when needed, and tells fn whether it did.
func (h *handler) withInit(ctx context.Context, fn func(app *bootstrap.App, created bool) error) error {
	return h.with(ctx, true, func(app *bootstrap.App) error { return fn(app, app.Services.Setup.Created) })
}

// inside says a discovered workspace root is another directory than start: start is inside it.
func inside(root, start string) bool {
	if r, err := filepath.EvalSymlinks(start); err == nil {
		start = r
	}
	return root != start
}
