package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// loggedKinds maps the commands that change the workspace or its store to their kind in the
// operation log. Read-only commands and dry runs are not logged; undo logs itself.
var loggedKinds = map[string]string{
	"init": "init", "checkpoint create": "checkpoint", "checkpoint delete": "delete", "checkpoint prune": "prune",
	"run": "run", "exec": "exec", "rollback": "rollback", "correct": "correct", "revert": "revert",
	"gc": "gc", "recover": "recover", "correction prune": "prune",
	"checkpoint pin": "pin", "checkpoint unpin": "unpin", "clone": "clone", "rewind": "rollback",
}

// opLog is what the running command will put in the operation log.
type opLog struct {
	// id, when set, is the operation's own ID (a rollback's or a correction's), so the log entry
	// and what the operation reverted name it alike.
	id    string
	kind  string
	start time.Time
	plan  string
	// used are checkpoints the command used (a rollback's target); those it created are found by
	// their creation time.
	used []checkpoint.ID
	// undo is the safety checkpoint taken before the workspace changed.
	undo checkpoint.ID
	// decisions says to log each decision attempt the command started as its own entry.
	decisions bool
}

// startOp notes the command about to run, if it is one the log keeps.
func (h *handler) startOp(c *ucli.Context) {
	kind, ok := loggedKinds[commandPath(c)]
	if !ok || c.Bool("dry-run") {
		return
	}
	h.op = &opLog{kind: kind, start: time.Now(), plan: c.String("plan"), decisions: kind == "run" || kind == "exec"}
}

// recordOp writes the command's log entry (and its decisions') once it ended with err. A log that
// cannot be written is a warning: the command's own outcome stands.
func (h *handler) recordOp(ctx context.Context, app *bootstrap.App, err error) {
	op := h.op
	if op == nil {
		return
	}
	h.op = nil
	ctx = context.WithoutCancel(ctx)
	outcome := "ok"
	if err != nil {
		_, outcome = exitCode(err)
	}
	entry := application.LoggedOperation{ID: op.id, Kind: op.kind, Args: h.argv, Plan: op.plan, StartedAt: op.start.UTC(),
		Outcome: outcome, Checkpoints: op.used, UndoCheckpoint: op.undo}
	created, lerr := app.Services.Checkpoints.ListSince(ctx, op.start)
	if lerr != nil {
		h.warn("operation log: " + lerr.Error())
		return
	}
	made := 0
	for _, c := range created {
		if !containsID(entry.Checkpoints, c.ID()) {
			entry.Checkpoints = append(entry.Checkpoints, c.ID())
			made++
		}
	}
	// A command refused before it changed anything (bad input, nothing found, a busy workspace)
	// is not an operation: the log would only fill with noise.
	switch outcome {
	case "usage", "invalid", "not_found", "conflict":
		if made == 0 && op.undo == "" {
			return
		}
	}
	if entry.Checkpoints == nil {
		entry.Checkpoints = []checkpoint.ID{}
	}
	var decisions []application.LoggedOperation
	if op.decisions {
		p, perr := app.Services.Plans.StatusOf(ctx, op.plan)
		if perr == nil {
			entry.Plan = p.Name()
			for _, d := range p.Decisions() {
				for _, a := range d.Attempts() {
					if a.StartedAt.Before(op.start) {
						continue
					}
					out := string(a.Status)
					if a.Status == "succeeded" {
						out = "ok"
					}
					decisions = append(decisions, application.LoggedOperation{
						Kind: "decision", Args: []string{d.ID()}, Plan: p.Name(), StartedAt: a.StartedAt, FinishedAt: a.FinishedAt,
						Outcome: out, Checkpoints: nonNilIDs(a.CheckpointID), UndoCheckpoint: a.CheckpointID,
					})
				}
			}
		}
	}
	if _, rerr := app.Services.History.Record(ctx, entry); rerr != nil {
		h.warn("operation log: " + rerr.Error())
		return
	}
	for _, d := range decisions {
		if d.FinishedAt.IsZero() {
			d.FinishedAt = time.Now()
		}
		if _, rerr := app.Services.History.Record(ctx, d); rerr != nil {
			h.warn("operation log: " + rerr.Error())
			return
		}
	}
}

func containsID(ids []checkpoint.ID, id checkpoint.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func nonNilIDs(id checkpoint.ID) []checkpoint.ID {
	if id == "" {
		return []checkpoint.ID{}
	}
	return []checkpoint.ID{id}
}

func (h *handler) historyCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "history", Usage: "the operation log: every command that changed the workspace, newest first",
			Flags: []ucli.Flag{
				&ucli.IntFlag{Name: "limit", Usage: "show the newest `N` only (0: all)"},
				&ucli.StringFlag{Name: "plan", Usage: "only the plan `NAME`'s operations"},
			},
			Action: h.history,
		},
		{
			Name: "undo", Usage: "undo the most recent rollback, correction or decision not undone yet",
			Description: "Rolls the workspace and the decision states back to the safety checkpoint taken just before that\n" +
				"operation. Run it again to undo the one before. The undo is logged, and reversible like any rollback.",
			Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "dry-run", Usage: "say what would be undone; change nothing"}},
			Action: h.undo,
		},
	}
}

type operationView struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	StartedAt      string   `json:"started_at"`
	FinishedAt     string   `json:"finished_at"`
	Args           []string `json:"args"`
	Outcome        string   `json:"outcome"`
	Checkpoints    []string `json:"checkpoints"`
	Plan           *string  `json:"plan"`
	UndoCheckpoint *string  `json:"undo_checkpoint"`
	UndoneBy       *string  `json:"undone_by"`
}

func newOperationView(op application.LoggedOperation) operationView {
	v := operationView{ID: op.ID, Kind: op.Kind, StartedAt: op.StartedAt.UTC().Format(time.RFC3339), FinishedAt: op.FinishedAt.UTC().Format(time.RFC3339),
		Args: append([]string{}, op.Args...), Outcome: op.Outcome, Checkpoints: []string{}, Plan: optional(op.Plan),
		UndoCheckpoint: optional(string(op.UndoCheckpoint)), UndoneBy: optional(op.UndoneBy)}
	for _, c := range op.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, string(c))
	}
	return v
}

func (h *handler) history(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		ops, err := app.Services.History.List(c.Context, c.Int("limit"), c.String("plan"))
		if err != nil {
			return err
		}
		vs := make([]operationView, 0, len(ops))
		for _, op := range ops {
			vs = append(vs, newOperationView(op))
		}
		return h.emit(vs, func(w io.Writer) {
			if len(ops) == 0 {
				_, _ = fmt.Fprintln(w, "No operations logged yet.")
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "ID\tKIND\tSTARTED\tOUTCOME\tCHECKPOINTS\tARGS")
			for _, op := range ops {
				outcome := op.Outcome
				if op.UndoneBy != "" {
					outcome += " (undone)"
				}
				var cps []string
				for _, c := range op.Checkpoints {
					cps = append(cps, string(c))
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", op.ID, op.Kind, op.StartedAt.Local().Format("2006-01-02 15:04:05"),
					outcome, strings.Join(cps, ","), shellJoin(op.Args))
			}
			_ = tw.Flush()
		})
	})
}

type undoView struct {
	Undone    operationView  `json:"undone"`
	Operation *operationView `json:"operation"`
	Rollback  rollbackView   `json:"rollback"`
	// Restored are the decisions the undone operation had reverted, back as they were.
	Restored []string `json:"restored_decisions"`
	DryRun   bool     `json:"dry_run"`
}

func (h *handler) undo(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.History
		if !dry && !h.yes {
			preview, err := svc.Undo(c.Context, application.UndoRequest{DryRun: true})
			if err != nil {
				return err
			}
			if err := h.confirm("undo", undoSummary(preview)); err != nil {
				return err
			}
		}
		res, err := svc.Undo(c.Context, application.UndoRequest{DryRun: dry, Progress: h.progress(), Warn: h.warn})
		if err != nil {
			return err
		}
		v := undoView{Undone: newOperationView(res.Undone), Rollback: newRollbackView(res.Rollback, res.Rollback.Kept),
			Restored: nonNil(res.Restored), DryRun: dry}
		if !dry {
			ov := newOperationView(res.Operation)
			v.Operation = &ov
		}
		return h.emit(v, func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, undoSummary(res))
				return
			}
			_, _ = fmt.Fprintf(w, "Undid %s %s: back to %s (%d added, %d modified, %d deleted).\n", res.Undone.Kind, res.Undone.ID,
				res.Rollback.Target.ID(), res.Rollback.Counts.Added, res.Rollback.Counts.Modified, res.Rollback.Counts.Deleted)
			if len(res.Rollback.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(res.Rollback.RevertedDecisions, ", "))
			}
			if len(res.Restored) > 0 {
				_, _ = fmt.Fprintf(w, "Decisions back as they were: %s\n", strings.Join(res.Restored, ", "))
			}
			_, _ = fmt.Fprintf(w, "Undo this undo with: plan rollback --to-checkpoint %s\n", res.Rollback.Backup.ID())
		})
	})
}

func undoSummary(r application.UndoResult) string {
	return fmt.Sprintf("Undoing %s %s (%s, %s) rolls back to its safety checkpoint %s.\n%s",
		r.Undone.Kind, r.Undone.ID, shellJoin(r.Undone.Args), r.Undone.StartedAt.Local().Format("2006-01-02 15:04:05"),
		r.Undone.UndoCheckpoint, rollbackSummary(r.Rollback))
}
