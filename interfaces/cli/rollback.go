package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

func (h *handler) restoreCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "rollback", Usage: "restore the workspace to a checkpoint, atomically",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "to-checkpoint", Usage: "the checkpoint `ID` to restore"},
				&ucli.BoolFlag{Name: "dry-run", Usage: "show what would change; change nothing"},
			},
			Action: h.rollback,
		},
		{Name: "recover", Usage: "finish or undo an operation a crash interrupted", Action: h.recoverCmd},
	}
}

func (h *handler) rollback(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	ref := c.String("to-checkpoint")
	if ref == "" {
		return usagef("missing --to-checkpoint ID (see `plan rollback --help`)")
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		if !dry && !h.yes {
			preview, err := svc.Rollback(c.Context, application.RollbackRequest{Ref: ref, DryRun: true})
			if err != nil {
				return err
			}
			if err := h.confirm("rollback", rollbackSummary(preview)); err != nil {
				return err
			}
		}
		res, err := svc.Rollback(c.Context, application.RollbackRequest{
			Ref: ref, DryRun: dry, Progress: h.progress(), Warn: h.warn,
		})
		if err != nil {
			return err
		}
		for _, k := range res.Kept {
			h.warn(fmt.Sprintf("left %q as it is: it holds data outside every snapshot (ignored)", k))
		}
		return h.emit(newRollbackView(res, res.Kept), func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, rollbackSummary(res))
				return
			}
			_, _ = fmt.Fprintf(w, "Rolled back to %s: %d added, %d modified, %d deleted.\n",
				res.Target.ID(), res.Counts.Added, res.Counts.Modified, res.Counts.Deleted)
			if len(res.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(res.RevertedDecisions, ", "))
			}
			_, _ = fmt.Fprintf(w, "Undo with: plan rollback --to-checkpoint %s\n", res.Backup.ID())
		})
	})
}

func rollbackSummary(r application.RollbackResult) string {
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "Rolling back to %s (%s, %s) would add %d, modify %d and delete %d files:\n",
		r.Target.ID(), r.Target.Type(), r.Target.CreatedAt().Format("2006-01-02 15:04:05"),
		r.Counts.Added, r.Counts.Modified, r.Counts.Deleted)
	const show = 20
	for i, ch := range r.Changes {
		if i == show {
			_, _ = fmt.Fprintf(&b, "  … and %d more\n", len(r.Changes)-show)
			break
		}
		_, _ = fmt.Fprintf(&b, "  %s %s\n", ch.Type.Letter(), ch.Path)
	}
	if len(r.Changes) == 0 {
		b.WriteString("  (the workspace already matches)\n")
	}
	return b.String()
}

func (h *handler) recoverCmd(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	app, err := h.open(c.Context, false)
	if err != nil {
		return err
	}
	defer func() { _ = app.Close() }()
	res, err := app.Services.Guard.Recover(c.Context)
	if err != nil {
		return err
	}
	v := recoverView{Recovered: res.Recovered}
	if res.Operation != nil {
		v.Operation = optional(res.Operation.ID)
		v.Kind = optional(res.Operation.Kind)
		v.Outcome = optional(res.Outcome)
	}
	if res.Recorded != "" {
		v.Recorded = optional(res.Recorded)
		v.Unrecorded = res.Unrecorded
	}
	return h.emit(v, func(w io.Writer) {
		if !res.Recovered {
			_, _ = fmt.Fprintln(w, "Nothing to recover: no operation was interrupted.")
			return
		}
		if res.Recorded != "" {
			_, _ = fmt.Fprintf(w, "The workspace had changed since the crash: %d path(s) recorded first as checkpoint %s.\n",
				len(res.Unrecorded), res.Recorded)
		}
		_, _ = fmt.Fprintf(w, "Recovered interrupted %s %s: %s.\n", res.Operation.Kind, res.Operation.ID, res.Outcome)
	})
}
