package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// pendingCommands are what is left to do before the workspace is worth checkpointing: conflicts,
// their resolve step, and validate.
func (h *handler) pendingCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "conflicts", Usage: "list the conflicts `plan revert --conflicts markers` left unresolved",
			Action: h.conflicts,
		},
		{
			Name: "resolve", Usage: "mark conflicts resolved once their files hold what you want", ArgsUsage: "PATH…",
			Description: "Marks the unresolved conflicts at each PATH resolved (all or none). A file that still holds conflict\n" +
				"markers (a line starting with <<<<<<< or >>>>>>>) is refused unless --force. A correction whose conflicts\n" +
				"are all resolved shows its status (succeeded) again instead of needs_attention.",
			Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "force", Usage: "mark them resolved even with conflict markers left"}},
			Action: h.resolve,
		},
		{
			Name: "validate", Usage: "say whether the workspace is worth checkpointing (pending operation, conflicts, validate.command)",
			Description: "Fails (exit 1, kind validation_failed) when an interrupted operation is pending, a conflict is\n" +
				"unresolved, or the check command configured as validate.command in .plan/config.yaml fails. The check\n" +
				"runs only when the rest passed; its output is shown on stderr and kept in the state directory's logs/.",
			Action: h.validate,
		},
	}
}

func newOpenConflictViews(cs []application.OpenConflict) []view.OpenConflict {
	out := make([]view.OpenConflict, 0, len(cs))
	for _, c := range cs {
		out = append(out, view.OpenConflict{Path: c.Conflict.Path, Why: c.Conflict.Why, Written: optional(c.Conflict.Written),
			CorrectionID: c.CorrectionID, DecisionID: c.DecisionID, ResolvedAt: timeString(c.Conflict.ResolvedAt)})
	}
	return out
}

func (h *handler) conflicts(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		cs, err := app.Services.Corrections.Conflicts(c.Context)
		if err != nil {
			return err
		}
		v := newOpenConflictViews(cs)
		return h.emit(v, func(w io.Writer) {
			if len(v) == 0 {
				_, _ = fmt.Fprintln(w, "No unresolved conflicts.")
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "PATH\tWRITTEN\tDECISION\tCORRECTION\tWHY")
			for _, x := range v {
				written := "-"
				if x.Written != nil {
					written = *x.Written
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", quote(x.Path), written, quote(x.DecisionID), x.CorrectionID, quote(x.Why))
			}
			_ = tw.Flush()
			_, _ = fmt.Fprintln(w, "Edit each to what you want, then: plan resolve PATH…")
		})
	})
}

func (h *handler) resolve(c *ucli.Context) error {
	if c.NArg() == 0 {
		return usagef("name the paths to mark resolved: plan resolve PATH… (plan conflicts lists them)")
	}
	root, err := h.workspaceRoot()
	if err != nil {
		return err
	}
	paths, err := h.workspacePaths(root, c.Args().Slice())
	if err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		done, err := app.Services.Corrections.Resolve(c.Context, application.ResolveRequest{Paths: paths, Force: c.Bool("force")})
		if err != nil {
			return err
		}
		v := newOpenConflictViews(done)
		return h.emit(v, func(w io.Writer) {
			for _, x := range v {
				_, _ = fmt.Fprintf(w, "Resolved %s (correction %s of %s).\n", quote(x.Path), x.CorrectionID, quote(x.DecisionID))
			}
		})
	})
}

type validationView struct {
	OK               bool                `json:"ok"`
	Problems         []string            `json:"problems"`
	PendingOperation *view.Pending       `json:"pending_operation"`
	Conflicts        []view.OpenConflict `json:"conflicts"`
	Check            *checkView          `json:"check"`
}

// checkView is the configured check command and how it went (ran false: it was not run, because
// something else failed first).
type checkView struct {
	Command  string  `json:"command"`
	Ran      bool    `json:"ran"`
	ExitCode *int    `json:"exit_code"`
	Error    *string `json:"error"`
	Log      *string `json:"log"`
}

// newValidationView is v as JSON, its check's log named in the state directory home.
func newValidationView(v application.Validation, home string) validationView {
	out := validationView{OK: v.OK(), Problems: nonNil(v.Problems()), Conflicts: newOpenConflictViews(v.Conflicts)}
	if op := v.Pending; op != nil {
		out.PendingOperation = &view.Pending{Kind: op.Kind, ID: op.ID}
	}
	if v.Command != "" {
		out.Check = &checkView{Command: v.Command, Ran: v.Ran, ExitCode: v.ExitCode, Error: optional(v.CommandError)}
		if v.Log != "" {
			out.Check.Log = optional(filepath.Join(home, filepath.FromSlash(v.Log)))
		}
	}
	return out
}

func (h *handler) validate(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		v, err := app.Services.Maintenance.Validate(c.Context, h.live())
		if err != nil {
			return err
		}
		view := newValidationView(v, app.Services.Layout.Home())
		if err := h.emit(view, func(w io.Writer) {
			if view.OK {
				what := "no check command configured (validate.command)"
				if view.Check != nil {
					what = fmt.Sprintf("the check %q passed", view.Check.Command)
				}
				_, _ = fmt.Fprintf(w, "The workspace is worth checkpointing: nothing pending, no unresolved conflict, %s.\n", what)
				return
			}
			_, _ = fmt.Fprintln(w, "The workspace is not worth checkpointing yet:")
			for _, p := range view.Problems {
				_, _ = fmt.Fprintf(w, "  %s\n", scrub(p))
			}
		}); err != nil {
			return err
		}
		if !v.OK() {
			return &application.NotValidError{Validation: v}
		}
		return nil
	})
}

// checkFor is the Check a checkpoint create --validate asks for: the configured command.
func (h *handler) checkFor(c *ucli.Context, app *bootstrap.App) (*application.CheckRequest, error) {
	if !c.Bool("validate") {
		return nil, nil
	}
	cmd, err := app.Services.Maintenance.CheckCommand()
	if err != nil {
		return nil, err
	}
	return &application.CheckRequest{Command: strings.TrimSpace(cmd), Live: h.live()}, nil
}

// addPending fills in what status tells beyond the changes: unresolved conflicts and the store.
func (h *handler) addPending(ctx context.Context, app *bootstrap.App, latest *checkpoint.Checkpoint, v *view.WorkspaceState) error {
	cs, err := app.Services.Corrections.Conflicts(ctx)
	if err != nil {
		return err
	}
	v.Conflicts = newOpenConflictViews(cs)
	sum := app.Services.Maintenance.Summary(ctx, latest)
	v.Store = view.StoreHealth{OK: sum.Problem == "", Problem: optional(sum.Problem), Location: optional(sum.Usage.Location),
		Packs: sum.Usage.Packs, Objects: sum.Usage.Objects, StoredBytes: sum.Usage.StoredBytes}
	return nil
}

func printPending(w io.Writer, ws view.WorkspaceState) {
	if n := len(ws.Conflicts); n > 0 {
		paths := make([]string, 0, n)
		for _, c := range ws.Conflicts {
			paths = append(paths, quote(c.Path))
		}
		_, _ = fmt.Fprintf(w, "unresolved conflicts: %d (%s): edit them, then plan resolve PATH…\n", n, strings.Join(paths, ", "))
	}
	st := ws.Store
	where := "private"
	if st.Location != nil {
		where = quote(*st.Location)
	}
	if st.OK {
		_, _ = fmt.Fprintf(w, "store: ok (%s, %d packs, %d objects, %s)\n", where, st.Packs, st.Objects, humanBytes(st.StoredBytes))
	} else {
		_, _ = fmt.Fprintf(w, "store: PROBLEM: %s\n", scrub(*st.Problem))
	}
}
