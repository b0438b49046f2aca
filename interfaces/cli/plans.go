package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

func (h *handler) planCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "run", Usage: "execute a plan file's decisions in order (resumes: succeeded decisions are skipped)",
			ArgsUsage: "FILE",
			Flags: []ucli.Flag{
				&ucli.BoolFlag{Name: "no-checkpoints", Usage: "do not checkpoint before each decision"},
				&ucli.BoolFlag{Name: "rerun-changed", Usage: "re-execute from the first succeeded decision whose command, env or validate the file changed (rolled back to its pre_decision checkpoint first)"},
				&ucli.StringFlag{Name: "on-failure", Value: "stop", Usage: "`stop`, rollback (to the failed decision's pre_decision checkpoint) or continue (with the next decision); a decision's on_failure overrides it"},
			},
			Action: h.run,
		},
		{
			Name: "exec", Usage: "execute one ad-hoc decision (on the plan adhoc, or --plan NAME)", ArgsUsage: "-- CMD [ARG…]",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "id", Usage: "the decision `ID` (default: generated from the command, e.g. make-1)"},
				&ucli.StringFlag{Name: "name", Usage: "a readable name"},
				&ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"},
			},
			Action: h.exec,
		},
		{
			Name: "status", Usage: "show the current plan (or --plan NAME) and its decisions",
			Flags: []ucli.Flag{&ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"}}, Action: h.status,
		},
		{
			Name: "log", Usage: "show the recorded output of a decision (all decisions without an ID)", ArgsUsage: "[DECISION]",
			Flags:  []ucli.Flag{&ucli.IntFlag{Name: "attempt", Usage: "attempt `N` (default: the latest)"}, &ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"}},
			Action: h.log,
		},
		{Name: "plans", Usage: "list every plan of the workspace, the current one first", Flags: []ucli.Flag{limitFlag()}, Action: h.plans},
	}
}

func (h *handler) run(c *ucli.Context) error {
	file, err := arg(c, 0, "FILE")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	policy, err := application.ParseOnFailure(c.String("on-failure"))
	if err != nil {
		return err
	}
	// Like git -C, -C DIR means "as if started in DIR": a relative plan file is found there.
	if !filepath.IsAbs(file) {
		file = filepath.Join(h.root, file)
	}
	pf, err := bootstrap.LoadPlanFile(file)
	if err != nil {
		return err
	}
	return h.with(c.Context, true, func(app *bootstrap.App) error {
		res, err := app.Services.Plans.Run(c.Context, application.RunRequest{
			Name: pf.Name, Source: file, Decisions: pf.Decisions, NoCheckpoints: c.Bool("no-checkpoints"),
			OnFailure: policy, Live: h.live(), Events: h.events(), Warn: h.warn, RerunChanged: c.Bool("rerun-changed"),
			Keep: planFileInside(app.Services.Layout.Root, file),
		})
		if err == nil {
			// The retention policy (.plan/config.yaml) runs after each successful run.
			if pr, ok, perr := app.Services.Maintenance.ApplyRetention(c.Context); perr != nil {
				h.warn("retention policy: " + perr.Error())
			} else if ok && !h.json {
				h.warnUndoLost(pr.Checkpoints.UndoLost)
				if n := len(pr.Checkpoints.Deleted); n > 0 {
					_, _ = fmt.Fprintf(h.r.Stderr, "plan: retention policy pruned %d checkpoints\n", n)
				}
				if n := len(pr.Archives.Deleted); n > 0 {
					_, _ = fmt.Fprintf(h.r.Stderr, "plan: retention policy removed %d correction archives (%s)\n", n, humanBytes(pr.Archives.BytesFreed))
				}
			}
		}
		return h.emitRun(res, err)
	})
}

func (h *handler) exec(c *ucli.Context) error {
	id := c.String("id") // "" generates one: WORD-N (application.GenerateDecisionID)
	if c.IsSet("id") {
		if err := plan.ValidateRunID(id); err != nil {
			return err
		}
	}
	if c.NArg() == 0 {
		return usagef("missing command: plan exec [--id ID] -- CMD [ARG…]")
	}
	script := shellJoin(c.Args().Slice())
	return h.with(c.Context, true, func(app *bootstrap.App) error {
		events := h.events()
		if events != nil {
			all := events
			// The line exec ends with says how the decision finished; the event would say it twice.
			events = func(e application.Event) {
				if e.Kind != "finish" {
					all(e)
				}
			}
		}
		res, err := app.Services.Plans.Exec(c.Context, application.ExecRequest{
			ID: id, Name: c.String("name"), Plan: c.String("plan"), Command: script, Live: h.live(), Events: events, Warn: h.warn,
		})
		if h.json {
			return childStatus(h.emitRun(res, err))
		}
		return childStatus(h.emitExec(res, err))
	})
}

// emitExec prints the one line an ad-hoc decision ends with (on stdout when it succeeded, on
// stderr with the error when it failed), not the plan's table: `plan status` shows that.
func (h *handler) emitExec(res application.RunResult, runErr error) error {
	var failed *application.DecisionFailedError
	id := ""
	switch {
	case errors.As(runErr, &failed):
		id = failed.DecisionID
	case runErr == nil && len(res.Ran) > 0:
		id = res.Ran[len(res.Ran)-1]
	}
	if res.Plan == nil || id == "" {
		return runErr
	}
	d, err := res.Plan.Decision(id)
	if err != nil {
		return runErr
	}
	a, _ := d.Latest()
	if runErr != nil {
		if a.CheckpointID == "" {
			return runErr
		}
		return fmt.Errorf("%w (checkpoint %s before it: plan rollback --to-checkpoint %s undoes it)", runErr, a.CheckpointID, a.CheckpointID)
	}
	var b strings.Builder
	if a.CheckpointID != "" {
		_, _ = fmt.Fprintf(&b, "; checkpoint %s before it", a.CheckpointID)
	}
	if res.End != nil {
		_, _ = fmt.Fprintf(&b, ", %s after it", res.End.ID())
	}
	n := len(a.Artifacts)
	_, _ = fmt.Fprintf(h.r.Stdout, "%s succeeded on plan %s (%d %s changed%s)\n", quote(d.ID()), quote(res.Plan.Name()), n, plural(n, "file", "files"), b.String())
	return nil
}

// childExit is a failure that exits with the status of the command that failed, as env, nice
// and timeout pass their command's through: 127 when the shell found no such command, 126 when
// it was not executable, 128+N when signal N killed it.
type childExit struct {
	err  error
	code int
}

func (e *childExit) Error() string { return e.err.Error() }
func (e *childExit) Unwrap() error { return e.err }

// childStatus makes the failure of an ad-hoc decision whose command exited non-zero exit with
// that status; any other error keeps its own.
func childStatus(err error) error {
	var failed *application.DecisionFailedError
	if errors.As(err, &failed) && !failed.Validation && failed.ExitCode != nil && *failed.ExitCode > 0 && *failed.ExitCode < 256 {
		return &childExit{err: err, code: *failed.ExitCode}
	}
	return err
}

// emitRun prints the plan state after a run, also when the run failed, then returns the error.
func (h *handler) emitRun(res application.RunResult, runErr error) error {
	if res.Plan == nil {
		return runErr
	}
	v := runView{statusView: newStatusView(res.Plan), Ran: nonNil(res.Ran), Skipped: nonNil(res.Skipped)}
	if res.End != nil {
		v.EndCheckpointID = optional(string(res.End.ID()))
	}
	if res.Rollback != nil {
		rv := newRollbackView(*res.Rollback, res.Rollback.Kept)
		v.Rollback = &rv
	}
	v.Changed, v.RerunFrom = newChangedViews(res)
	if runErr != nil {
		// One JSON document on stdout, the error on stderr: print the state only in text mode.
		if !h.json {
			printStatus(h.r.Stderr, v.statusView)
		}
		return runErr
	}
	return h.emit(v, func(w io.Writer) {
		printStatus(w, v.statusView)
		if v.RerunFrom != nil {
			_, _ = fmt.Fprintf(w, "Re-ran from %s, whose definition changed: the workspace went back to its pre_decision checkpoint %s first (plan undo takes the re-run back).\n",
				quote(*v.RerunFrom), res.Rerun.Target.ID())
		}
		if v.EndCheckpointID != nil {
			_, _ = fmt.Fprintf(w, "The end of the run is checkpoint %s.\n", *v.EndCheckpointID)
		}
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// live is where decisions' output is shown as it happens: stderr, except with --json.
func (h *handler) live() io.Writer {
	if h.json || h.quiet {
		return nil
	}
	return h.r.Stderr
}

func (h *handler) events() func(application.Event) {
	if h.json || h.quiet {
		return nil
	}
	return func(e application.Event) {
		w := h.r.Stderr
		switch e.Kind {
		case "skip":
			_, _ = fmt.Fprintf(w, "plan: %s already succeeded; skipping it\n", quote(e.DecisionID))
		case "start":
			cp := "no checkpoint"
			if e.Attempt.CheckpointID != "" {
				cp = "checkpoint " + string(e.Attempt.CheckpointID)
			}
			cmd, _, multi := strings.Cut(strings.TrimSpace(e.Attempt.Command), "\n")
			if multi {
				cmd += " …"
			}
			_, _ = fmt.Fprintf(w, "plan: running %s (attempt %d, %s): %s\n", quote(e.DecisionID), e.Attempt.Number, cp, quote(cmd))
		case "finish":
			_, _ = fmt.Fprintf(w, "plan: %s %s (%d artifacts)\n", quote(e.DecisionID), e.Attempt.Status, len(e.Attempt.Artifacts))
		case "retry":
			_, _ = fmt.Fprintf(w, "plan: retrying %s from its pre_decision checkpoint (attempt %d failed)\n", quote(e.DecisionID), e.Attempt.Number)
		}
	}
}

func (h *handler) status(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		v := view.WorkspaceStatus{Decisions: []view.Decision{}}
		p, err := app.Services.Plans.StatusOf(c.Context, c.String("plan"))
		switch {
		case err == nil:
			sv := newStatusView(p)
			v.Plan, v.Decisions = &sv.Plan, sv.Decisions
		case !errors.Is(err, fault.ErrNotFound) || c.IsSet("plan"):
			return err
		}
		pending, err := app.Services.Read.Pending(c.Context, h.progress())
		if err != nil {
			return err
		}
		v.Workspace = newWorkspaceStateView(app, pending, h.pending)
		if pending.Latest != nil {
			short := shortName(c.Context, app, pending.Latest)
			v.Workspace.LatestShortID = &short
		}
		if err := h.addPending(c.Context, app, pending.Latest, &v.Workspace); err != nil {
			return err
		}
		return h.emit(v, func(w io.Writer) { printWorkspaceStatus(w, v) })
	})
}

func newWorkspaceStateView(app *bootstrap.App, p application.Pending, op *port.Operation) view.WorkspaceState {
	v := view.WorkspaceState{Root: app.Services.Layout.Root}
	if p.Latest != nil {
		v.LatestCheckpoint = optional(string(p.Latest.ID()))
		v.Head = v.LatestCheckpoint
	}
	for _, ch := range p.Changes {
		switch ch.Type {
		case tree.Added:
			v.Changes.Added++
		case tree.Deleted:
			v.Changes.Deleted++
		default:
			v.Changes.Modified++
		}
	}
	if op != nil {
		v.PendingOperation = &view.Pending{Kind: op.Kind, ID: op.ID}
	}
	v.Unreadable = p.Unreadable
	return v
}

func printWorkspaceStatus(w io.Writer, v view.WorkspaceStatus) {
	ws := v.Workspace
	_, _ = fmt.Fprintf(w, "workspace %s\n", quote(ws.Root))
	if ws.LatestCheckpoint == nil {
		_, _ = fmt.Fprintln(w, "no checkpoint yet")
	} else {
		_, _ = fmt.Fprintf(w, "head %s (%s)\n", *ws.LatestShortID, *ws.LatestCheckpoint)
	}
	if c := ws.Changes; c.Added+c.Modified+c.Deleted == 0 {
		_, _ = fmt.Fprintln(w, "no changes since")
	} else {
		n := c.Added + c.Modified + c.Deleted
		_, _ = fmt.Fprintf(w, "changes since: %d %s (%d added, %d modified, %d deleted; plan diff @ lists them)\n",
			n, plural(n, "file", "files"), c.Added, c.Modified, c.Deleted)
	}
	if op := ws.PendingOperation; op != nil {
		_, _ = fmt.Fprintf(w, "pending: an interrupted %s (%s): plan recover finishes it\n", op.Kind, op.ID)
	}
	if len(ws.Unreadable) > 0 {
		_, _ = fmt.Fprintf(w, "unreadable: %s\n", bootstrap.UnreadableWarning(ws.Unreadable))
	}
	printPending(w, ws)
	_, _ = fmt.Fprintln(w)
	if v.Plan == nil {
		_, _ = fmt.Fprintln(w, "no plan has run yet: plan run FILE or plan exec starts one")
		return
	}
	printStatus(w, statusView{Plan: *v.Plan, Decisions: v.Decisions})
}

func (h *handler) log(c *ucli.Context) error {
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	attempt := c.Int("attempt")
	if attempt < 0 {
		return fault.Invalid("--attempt must be positive")
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Plans
		var ids []string
		if c.NArg() == 1 {
			ids = []string{c.Args().First()}
		} else {
			p, err := svc.StatusOf(c.Context, c.String("plan"))
			if err != nil {
				return err
			}
			for _, d := range p.Decisions() {
				if len(d.Attempts()) > 0 {
					ids = append(ids, d.ID())
				}
			}
		}
		views := []logView{} // none ran: an empty list, not null
		for _, id := range ids {
			rc, a, err := svc.LogOf(c.Context, c.String("plan"), id, attempt)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				return err
			}
			views = append(views, logView{Decision: id, Attempt: a.Number, Status: string(a.Status), LogPath: filepath.Join(app.Services.Layout.Home(), filepath.FromSlash(a.LogPath)), Output: string(b)})
		}
		return h.emit(views, func(w io.Writer) {
			for _, v := range views {
				if len(views) > 1 {
					_, _ = fmt.Fprintf(w, "==> %s (attempt %d, %s) <==\n", quote(v.Decision), v.Attempt, v.Status)
				}
				// What the decision printed, replayed with its control characters escaped (as
				// journalctl shows a log): the terminal it ran on took them then, this one need not.
				// The log file, and --json, hold the exact bytes.
				_, _ = io.WriteString(w, scrub(v.Output))
			}
		})
	})
}

type logView struct {
	Decision string `json:"decision"`
	Attempt  int    `json:"attempt"`
	Status   string `json:"status"`
	LogPath  string `json:"log_path"`
	Output   string `json:"output"`
}

type statusView struct {
	Plan      view.Plan       `json:"plan"`
	Decisions []view.Decision `json:"decisions"`
}

type runView struct {
	statusView
	Ran      []string       `json:"ran"`
	Skipped  []string       `json:"skipped"`
	Rollback *view.Rollback `json:"rollback,omitempty"`
	// EndCheckpointID is the post_run checkpoint of the state the run ended in (null when none was
	// taken).
	EndCheckpointID *string `json:"end_checkpoint_id"`
	// Changed are the succeeded decisions the plan file changed; RerunFrom the one --rerun-changed
	// re-executed from (null without it).
	Changed   []changedView `json:"changed_decisions"`
	RerunFrom *string       `json:"rerun_from"`
}

func timeString(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func newAttemptView(a plan.Attempt) view.Attempt {
	v := view.Attempt{
		Attempt: a.Number, Status: string(a.Status), Command: a.Command, CheckpointID: optional(string(a.CheckpointID)),
		ExitCode: a.ExitCode, StartedAt: timeString(a.StartedAt), FinishedAt: timeString(a.FinishedAt),
		RevertedBy: optional(a.RevertedBy), Artifacts: []view.Artifact{},
	}
	for _, x := range a.Artifacts {
		v.Artifacts = append(v.Artifacts, view.Artifact{Path: x.Path, Change: string(x.Change), Size: x.Size, SHA256: x.SHA256})
	}
	return v
}

func newStatusView(p *plan.Plan) statusView {
	v := statusView{
		Plan: view.Plan{ID: p.ID(), Name: p.Name(), Source: p.Source(), Checkpoints: p.Checkpoints(),
			CreatedAt: p.CreatedAt().UTC().Format(time.RFC3339)},
		Decisions: []view.Decision{},
	}
	for _, d := range p.Decisions() {
		def := d.Definition()
		dv := view.Decision{ID: d.ID(), Name: def.Name, Status: string(d.Status()), Command: def.Run,
			Artifacts: []view.Artifact{}, Attempts: []view.Attempt{}}
		for _, a := range d.Attempts() {
			dv.Attempts = append(dv.Attempts, newAttemptView(a))
		}
		if a, ran := d.Latest(); ran {
			av := newAttemptView(a)
			dv.Attempt, dv.CheckpointID, dv.ExitCode = av.Attempt, av.CheckpointID, av.ExitCode
			dv.StartedAt, dv.FinishedAt, dv.Artifacts, dv.Command = av.StartedAt, av.FinishedAt, av.Artifacts, av.Command
		}
		v.Decisions = append(v.Decisions, dv)
	}
	return v
}

func printStatus(w io.Writer, v statusView) {
	cps := "checkpoints on"
	if !v.Plan.Checkpoints {
		cps = "checkpoints OFF (--no-checkpoints): decisions cannot be rolled back or corrected"
	}
	_, _ = fmt.Fprintf(w, "plan %s (%s)\n", quote(v.Plan.Name), cps)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "DECISION\tSTATUS\tATTEMPT\tEXIT\tCHECKPOINT\tARTIFACTS\tNAME")
	for _, d := range v.Decisions {
		exit, cp := "-", "-"
		if d.ExitCode != nil {
			exit = fmt.Sprint(*d.ExitCode)
		}
		if d.CheckpointID != nil {
			cp = *d.CheckpointID
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", quote(d.ID), d.Status, d.Attempt, exit, cp, len(d.Artifacts), quote(d.Name))
	}
	_ = tw.Flush()
}

// shellJoin quotes argv so that /bin/sh -c runs exactly these arguments.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)
			return !plain
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

type planSummaryView struct {
	Name      string         `json:"name"`
	Source    string         `json:"source"`
	Current   bool           `json:"current"`
	Decisions map[string]int `json:"decisions"`
	LastRunAt *string        `json:"last_run_at"`
}

func (h *handler) plans(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		sums, err := app.Services.Plans.Plans(c.Context)
		if err != nil {
			return err
		}
		if sums, err = limited(c, sums); err != nil {
			return err
		}
		views := make([]planSummaryView, 0, len(sums))
		for _, s := range sums {
			v := planSummaryView{Name: s.Plan.Name(), Source: s.Plan.Source(), Current: s.Current,
				Decisions: map[string]int{}, LastRunAt: timeString(s.LastRunAt)}
			for st, n := range s.Decisions {
				v.Decisions[string(st)] = n
			}
			views = append(views, v)
		}
		return h.emit(views, func(w io.Writer) {
			if len(views) == 0 {
				_, _ = fmt.Fprintln(w, "No plan has run yet.")
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "PLAN\tCURRENT\tDECISIONS\tLAST RUN\tSOURCE")
			for _, v := range views {
				cur := ""
				if v.Current {
					cur = "*"
				}
				var counts []string
				for _, st := range []string{"succeeded", "failed", "interrupted", "reverted", "running", "pending", "skipped"} {
					if n := v.Decisions[st]; n > 0 {
						counts = append(counts, fmt.Sprintf("%d %s", n, st))
					}
				}
				last := "-"
				if v.LastRunAt != nil {
					last = localOf(*v.LastRunAt)
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", quote(v.Name), cur, strings.Join(counts, ", "), last, quote(v.Source))
			}
			_ = tw.Flush()
		})
	})
}
