package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// loggedKinds maps the commands that change the workspace or its store to their kind in the
// operation log. Read-only commands and dry runs are not logged; undo logs itself.
var loggedKinds = map[string]string{
	"init": "init", "checkpoint create": "checkpoint", "checkpoint delete": "delete", "checkpoint prune": "prune",
	"run": "run", "exec": "exec", "rollback": "rollback", "correct": "correct", "revert": "revert",
	"gc": "gc", "recover": "recover", "correction prune": "prune",
	"checkpoint pin": "pin", "checkpoint unpin": "unpin", "clone": "clone", "rewind": "rollback", "resolve": "resolve",
}

// opLog is the running command's entry in the operation log. The services it calls fill it in
// (what they made, used and can undo: see application.Recording); the command writes it once, when
// it ends.
type opLog struct {
	rec *application.Recording
}

// startOp notes the command about to run, if it is one the log keeps; under any other command (and
// a dry run) the services log nothing.
func (h *handler) startOp(c *ucli.Context) {
	h.path = commandPath(c)
	kind, ok := loggedKinds[h.path]
	if !ok || c.Bool("dry-run") {
		c.Context = application.Unrecorded(c.Context)
		return
	}
	rec := application.NewRecording(kind, h.argv, c.String("plan"), time.Now())
	h.op = &opLog{rec: rec}
	c.Context = application.WithRecording(c.Context, rec)
}

// recordOp writes the command's log entry (and its decisions') once it ended with err. A log that
// cannot be written is a warning: the command's own outcome stands.
func (h *handler) recordOp(ctx context.Context, app *bootstrap.App, err error) {
	op := h.op
	if op == nil {
		return
	}
	h.op = nil
	outcome := application.OutcomeOK
	if err != nil {
		_, outcome = exitCode(err)
	}
	if ferr := app.Services.History.Finish(context.WithoutCancel(ctx), op.rec, outcome); ferr != nil {
		h.warn("operation log: " + ferr.Error())
	}
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
	}
}

func newOperationView(op port.LoggedOperation) view.Operation {
	v := view.Operation{ID: op.ID, Kind: op.Kind, StartedAt: op.StartedAt.UTC().Format(time.RFC3339), FinishedAt: op.FinishedAt.UTC().Format(time.RFC3339),
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
		shorts, err := app.Services.Checkpoints.ShortNames(c.Context)
		if err != nil {
			return err
		}
		vs := make([]view.Operation, 0, len(ops))
		for _, op := range ops {
			vs = append(vs, newOperationView(op))
		}
		return h.emit(vs, func(w io.Writer) {
			if len(ops) == 0 {
				_, _ = fmt.Fprintln(w, "No operations logged yet.")
				return
			}
			writeHistory(w, h.colors, ops, shorts)
		})
	})
}

// historyWidth is the width the history's text fits in: a terminal of 100 columns shows each
// entry whole.
const historyWidth = 100

// writeHistory prints the log two lines an entry, as jj's op log does: the entry's ID, kind,
// outcome and start time, then, indented, the command (cut to fit) and the checkpoints it made or
// used, by their short names.
func writeHistory(w io.Writer, p palette, ops []port.LoggedOperation, shorts map[checkpoint.ID]string) {
	kindW, outW := len("KIND"), len("OUTCOME")
	outcomes := make([]string, len(ops))
	for i, op := range ops {
		outcomes[i] = quote(op.Outcome)
		if op.UndoneBy != "" {
			outcomes[i] += " (undone)"
		}
		kindW, outW = max(kindW, len(op.Kind)), max(outW, len(outcomes[i]))
	}
	_, _ = fmt.Fprintf(w, "%-24s  %-*s  %-*s  %s\n", "ID", kindW, "KIND", outW, "OUTCOME", "STARTED")
	for i, op := range ops {
		_, _ = fmt.Fprintf(w, "%-24s  %-*s  %s  %s\n", op.ID, kindW, op.Kind,
			p.outcome(fmt.Sprintf("%-*s", outW, outcomes[i])), localTime(op.StartedAt))
		var names []string
		for _, c := range op.Checkpoints {
			if n := shorts[c]; n != "" {
				names = append(names, n)
			} else {
				names = append(names, string(c)) // deleted since: its full ID
			}
		}
		tail := ""
		if len(names) > 0 {
			tail = "  @ " + strings.Join(names, " ")
		}
		const indent = "    "
		cmd := quote(shellJoin(op.Args))
		if room := historyWidth - len(indent) - utf8.RuneCountInString(tail); utf8.RuneCountInString(cmd) > room {
			cmd = string([]rune(cmd)[:max(room-1, 0)]) + "…"
		}
		_, _ = fmt.Fprintf(w, "%s%s%s\n", indent, cmd, p.paint(sgrDim, tail))
	}
}
