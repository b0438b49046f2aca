package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// undoCommands are undo (plain, --to ENTRY) and redo, and what is pending before a checkpoint
// (conflicts, resolve, validate).
func (h *handler) undoCommands() []*ucli.Command {
	return append([]*ucli.Command{
		{
			Name: "undo", Usage: "undo the most recent rollback, correction or decision not undone yet (--to ENTRY: everything after a log entry)",
			Description: "Rolls the workspace and the decision states back to the safety checkpoint taken just before that\n" +
				"operation. Run it again to undo the one before; --to ENTRY restores the state right after a `plan history`\n" +
				"entry, undoing everything after it at once. An operation whose safety checkpoint was pruned is undone\n" +
				"together with the one before it (with a warning). The undo is logged, and `plan redo` takes it back.",
			Flags: []ucli.Flag{
				&ucli.BoolFlag{Name: "dry-run", Usage: "say what would be undone; change nothing"},
				&ucli.StringFlag{Name: "to", Usage: "restore the state right after the log entry `ENTRY` (an ID or unique prefix from plan history)"},
			},
			Action: h.undo,
		},
		{
			Name: "redo", Usage: "take back the most recent undo, unless something changed the workspace since",
			Description: "Rolls the workspace and the decision states forward to how they were just before the newest undo that\n" +
				"stands; the operations it undid stand again. Refused (exit 5) when a decision, rollback, correction or\n" +
				"revert ran after that undo: redoing would throw its changes away. The redo is logged and reversible.",
			Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "dry-run", Usage: "say what would be redone; change nothing"}},
			Action: h.redo,
		},
	}, h.pendingCommands()...)
}

func newUndoView(res application.UndoResult, dry bool) view.Undo {
	v := view.Undo{Undone: newOperationView(res.Undone), All: []view.Operation{}, Skipped: []string{},
		Rollback: newRollbackView(res.Rollback, res.Rollback.Kept), Restored: nonNil(res.Restored), DryRun: dry}
	for _, op := range res.All {
		v.All = append(v.All, newOperationView(op))
	}
	for _, op := range res.Skipped {
		v.Skipped = append(v.Skipped, op.ID)
	}
	if !dry {
		ov := newOperationView(res.Operation)
		v.Operation = &ov
	}
	return v
}

func (h *handler) undo(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	if c.IsSet("to") && strings.TrimSpace(c.String("to")) == "" {
		return usagef("--to needs a log entry (an ID from plan history)")
	}
	dry := c.Bool("dry-run")
	to := c.String("to")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.History
		if !dry && !h.yes {
			preview, err := svc.Undo(c.Context, application.UndoRequest{DryRun: true, To: to})
			if err != nil {
				return err
			}
			if err := h.confirm("undo", undoSummary(preview)); err != nil {
				return err
			}
		}
		res, err := svc.Undo(c.Context, application.UndoRequest{DryRun: dry, To: to, Progress: h.progress(), Warn: h.warn})
		if err != nil {
			return err
		}
		return h.emit(newUndoView(res, dry), func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, undoSummary(res))
				return
			}
			what := res.Undone.Kind + " " + res.Undone.ID
			if len(res.All) > 1 {
				what = fmt.Sprintf("%d operations (back to before %s)", len(res.All), what)
			}
			_, _ = fmt.Fprintf(w, "Undid %s: back to %s (%d added, %d modified, %d deleted).\n", what,
				res.Rollback.Target.ID(), res.Rollback.Counts.Added, res.Rollback.Counts.Modified, res.Rollback.Counts.Deleted)
			if len(res.Rollback.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(quoteEach(res.Rollback.RevertedDecisions), ", "))
			}
			if len(res.Restored) > 0 {
				_, _ = fmt.Fprintf(w, "Decisions back as they were: %s\n", strings.Join(quoteEach(res.Restored), ", "))
			}
			_, _ = fmt.Fprintf(w, "Undo this undo with: plan redo (or plan rollback --to-checkpoint %s)\n", res.Rollback.Backup.ID())
		})
	})
}

func undoSummary(r application.UndoResult) string {
	var b strings.Builder
	if len(r.All) > 1 {
		_, _ = fmt.Fprintf(&b, "Undoing %d operations:\n", len(r.All))
		for _, op := range r.All {
			_, _ = fmt.Fprintf(&b, "  %s %s (%s)\n", op.Kind, op.ID, quote(shellJoin(op.Args)))
		}
	}
	_, _ = fmt.Fprintf(&b, "Undoing %s %s (%s, %s) rolls back to its safety checkpoint %s.\n%s",
		r.Undone.Kind, r.Undone.ID, quote(shellJoin(r.Undone.Args)), localTime(r.Undone.StartedAt),
		r.Undone.UndoCheckpoint, rollbackSummary(r.Rollback))
	return b.String()
}

type redoView struct {
	Undo      view.Operation   `json:"undo"`
	Redone    []view.Operation `json:"redone"`
	Operation *view.Operation  `json:"operation"`
	Rollback  view.Rollback    `json:"rollback"`
	Reverted  []string         `json:"reverted_decisions"`
	Restored  []string         `json:"restored_decisions"`
	DryRun    bool             `json:"dry_run"`
}

func (h *handler) redo(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.History
		if !dry && !h.yes {
			preview, err := svc.Redo(c.Context, application.RedoRequest{DryRun: true})
			if err != nil {
				return err
			}
			if err := h.confirm("redo", redoSummary(preview)); err != nil {
				return err
			}
		}
		res, err := svc.Redo(c.Context, application.RedoRequest{DryRun: dry, Progress: h.progress(), Warn: h.warn})
		if err != nil {
			return err
		}
		v := redoView{Undo: newOperationView(res.Undo), Redone: []view.Operation{}, Rollback: newRollbackView(res.Rollback, res.Rollback.Kept),
			Reverted: nonNil(res.Reverted), Restored: nonNil(res.Restored), DryRun: dry}
		for _, op := range res.Redone {
			v.Redone = append(v.Redone, newOperationView(op))
		}
		if !dry {
			ov := newOperationView(res.Operation)
			v.Operation = &ov
		}
		return h.emit(v, func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, redoSummary(res))
				return
			}
			_, _ = fmt.Fprintf(w, "Redid what undo %s undid: back to %s (%d added, %d modified, %d deleted).\n", res.Undo.ID,
				res.Rollback.Target.ID(), res.Rollback.Counts.Added, res.Rollback.Counts.Modified, res.Rollback.Counts.Deleted)
			if len(res.Restored) > 0 {
				_, _ = fmt.Fprintf(w, "Decisions back as they were: %s\n", strings.Join(quoteEach(res.Restored), ", "))
			}
			if len(res.Reverted) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted again: %s\n", strings.Join(quoteEach(res.Reverted), ", "))
			}
			_, _ = fmt.Fprintln(w, "plan undo takes it back again.")
		})
	})
}

func redoSummary(r application.RedoResult) string {
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "Redoing undo %s (%s) brings back:\n", r.Undo.ID, localTime(r.Undo.StartedAt))
	for _, op := range r.Redone {
		_, _ = fmt.Fprintf(&b, "  %s %s (%s)\n", op.Kind, op.ID, quote(shellJoin(op.Args)))
	}
	b.WriteString(rollbackSummary(r.Rollback))
	return b.String()
}

// changedView is a succeeded decision whose definition the plan file changed.
type changedView struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
	// Supersedes is the correction whose command the plan file's new one replaces (null when none).
	Supersedes *string `json:"supersedes"`
}

func newChangedViews(res application.RunResult) ([]changedView, *string) {
	out := make([]changedView, 0, len(res.Changed))
	for _, c := range res.Changed {
		out = append(out, changedView{ID: c.ID, Fields: c.Fields, Supersedes: optional(c.Supersedes)})
	}
	if res.Rerun == nil || len(res.Changed) == 0 {
		return out, nil
	}
	return out, optional(res.Changed[0].ID)
}

// planFileInside is the plan file's workspace-relative path when it lies in the workspace (a
// --rerun-changed rollback keeps it as edited), nil otherwise.
func planFileInside(root, file string) []string {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if f, err := filepath.EvalSymlinks(file); err == nil {
		file = f
	}
	rel, ok := relToWorkspace(root, file)
	if !ok || rel == "." {
		return nil
	}
	return []string{filepath.ToSlash(rel)}
}

// warnUndoLost says which operations a retention prune took the safety checkpoint of: plan undo
// steps past them now.
func (h *handler) warnUndoLost(lost []port.LoggedOperation) {
	if len(lost) == 0 {
		return
	}
	ids := make([]string, len(lost))
	for i, op := range lost {
		ids[i] = op.Kind + " " + op.ID
	}
	h.warn(fmt.Sprintf("the retention policy deleted the safety checkpoints of %d operations plan undo could still take back (%s): undo steps past them",
		len(lost), strings.Join(ids, ", ")))
}
