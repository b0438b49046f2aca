package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/agenthooks"
	"github.com/planhq/plan/interfaces/view"
)

// HookLockWait is how long `plan hook` waits for the workspace lock: an agent's parallel tool
// calls run their hooks at once, and they queue on it.
const HookLockWait = 45 * time.Second

// agentCommands are the commands that make plan the undo layer of AI coding agents
// (docs/agents.md): the hook the agents call, the sessions they recorded, and the way back.
func (h *handler) agentCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			// Hidden from plan --help: the agent runs it, not a person (plan help hook still shows it).
			Name: "hook", Hidden: true, Usage: "record an AI coding agent's hook event (the agent runs this; see docs/agents.md)",
			ArgsUsage: "claude|codex|gemini EVENT",
			Description: "Reads the agent's hook JSON on stdin and answers as its hook protocol expects: before a mutating\n" +
				"tool call it checkpoints the workspace, after it records what the call changed, a prompt opens a\n" +
				"turn and the agent's stop closes it. Exit 0 lets the agent go on; 2 blocks the tool call (only with\n" +
				"hooks.fail_closed: true when plan could not checkpoint); 1 is a hook invoked wrongly.",
			Action: h.hook,
		},
		{
			Name: "sessions", Usage: "list the recorded agent sessions with their turns and tool calls",
			ArgsUsage: "[SESSION]",
			Action:    h.sessions,
		},
		{
			Name: "rewind", Usage: "restore the workspace to before a turn or a tool call of an agent session",
			ArgsUsage: "[--] [PATH…]",
			Description: "A rollback to the checkpoint taken as the turn's prompt arrived (--turn) or just before the tool\n" +
				"call ran (--tool-call): journaled, with a pre_rollback checkpoint, undone by `plan undo`.\n" +
				"--both (the default) restores the files and marks every decision started since as reverted;\n" +
				"--files restores the files only; --state only marks the decisions. With PATHs only those are restored.",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "session", Usage: "the session: its plan name or its ID (`plan sessions` lists them)"},
				&ucli.IntFlag{Name: "turn", Usage: "rewind to before turn `N`"},
				&ucli.StringFlag{Name: "tool-call", Usage: "rewind to before the tool call `ID`"},
				&ucli.BoolFlag{Name: "files", Usage: "restore the files only; the decisions' states stay"},
				&ucli.BoolFlag{Name: "state", Usage: "mark the decisions since as reverted only; the files stay"},
				&ucli.BoolFlag{Name: "both", Usage: "files and decision states (the default)"},
				&ucli.BoolFlag{Name: "dry-run", Usage: "show what would change; change nothing"},
			},
			Action: h.rewind,
		},
	}
}

// hook runs one hook invocation. Whatever happens, it answers in the agent's protocol: it never
// prints plan's own error format, and its exit code is the protocol's.
func (h *handler) hook(c *ucli.Context) error {
	if c.NArg() != 2 {
		return h.reply(agenthooks.Misuse(fmt.Sprintf("plan hook wants AGENT EVENT (%s), got %d arguments", strings.Join(agenthooks.Agents, "|"), c.NArg())))
	}
	agent, event := c.Args().Get(0), c.Args().Get(1)
	if err := agenthooks.CheckInvocation(agent, event); err != nil {
		return h.reply(agenthooks.Misuse(err.Error()))
	}
	data, err := io.ReadAll(io.LimitReader(h.r.Stdin, agenthooks.MaxPayload+1))
	if err == nil && len(data) > agenthooks.MaxPayload {
		err = fmt.Errorf("the payload is over %d bytes", agenthooks.MaxPayload)
	}
	var ev agenthooks.Event
	if err == nil {
		ev, err = agenthooks.Parse(agent, event, data)
	}
	if ev.Cwd != "" && filepath.IsAbs(ev.Cwd) && !c.IsSet("workspace") {
		if st, serr := os.Stat(ev.Cwd); serr == nil && st.IsDir() {
			h.root = ev.Cwd
		}
	}
	root, rootErr := h.workspaceRoot()
	if err != nil {
		// Nothing is recorded. Only a pre-tool event fails closed: plan could not checkpoint.
		if rootErr == nil && agenthooks.CanBlock(agent, event) && failClosed(root) {
			return h.reply(agenthooks.Block(agent, event, "the tool call was blocked (hooks.fail_closed): "+err.Error()))
		}
		return h.reply(agenthooks.Misuse(err.Error()))
	}
	if ev.Action == agenthooks.Ignore {
		return h.reply(agenthooks.Allow())
	}
	reattach := false
	if rootErr == nil && !isWorkspace(root) {
		// A workspace that lost its .plan/ (the agent ran `git clean -fdx`, say): the hooks
		// re-attach it and go on recording, as the user would have to otherwise.
		_, reattach = bootstrap.Former(root, h.getenv)
	}
	if rootErr != nil || !isWorkspace(root) && !reattach {
		// Not a workspace: the agent works on untracked files. Said before a tool call, so the
		// user knows nothing is recorded; every other event is silent.
		if ev.Action == agenthooks.BeforeTool {
			return h.reply(agenthooks.Warn(fmt.Sprintf("%s is not in a plan workspace: this %s call is not checkpointed (`plan init` makes one)", h.root, ev.Tool)))
		}
		return h.reply(agenthooks.Allow())
	}
	h.lockWait = HookLockWait
	h.root, h.exactRoot = root, reattach || h.exactRoot
	app, err := h.open(c.Context, reattach)
	if err != nil {
		return h.reply(h.hookFailure(root, ev, err))
	}
	defer func() { _ = app.Close() }()
	app.Services.Maintenance.OnRecover(h.reportRecovery)
	reply := h.act(c.Context, app, ev)
	// Every checkpoint a hook takes is a pack: merged as after any other command, so that a long
	// session's later calls do not read more index files than its first. A hook that plan watch
	// served leaves that to the service, which merges between calls (off the agent's critical
	// path); one that walked merges itself, timed apart (PLAN_TIMINGS).
	if !app.WatchServed() {
		endMerge := bootstrap.Span("consolidate")
		h.consolidate(c.Context, app)
		endMerge()
	}
	return h.reply(reply)
}

// act records ev and answers the agent.
func (h *handler) act(ctx context.Context, app *bootstrap.App, ev agenthooks.Event) agenthooks.Reply {
	svc := app.Services.Agents
	sess := application.Session{Agent: ev.Agent, ID: ev.Session}
	call := application.ToolCall{Session: sess, ID: ev.CallID, Tool: ev.Tool, Summary: ev.Summary, Derived: ev.Derived}
	root := app.Services.Layout.Root
	switch ev.Action {
	case agenthooks.BeforeTool:
		if _, err := svc.BeforeTool(ctx, call); err != nil {
			return h.hookFailure(root, ev, err)
		}
	case agenthooks.AfterTool:
		res, err := svc.AfterTool(ctx, call, ev.Failed)
		if err != nil {
			return h.hookFailure(root, ev, err)
		}
		if res.LogFailed != nil {
			// The call is recorded; only its entry in `plan history` is missing.
			h.warn("operation log: " + res.LogFailed.Error())
		}
	case agenthooks.Prompt:
		if _, err := svc.Prompt(ctx, sess, ev.Prompt); err != nil {
			return h.hookFailure(root, ev, err)
		}
		if w := h.ensureWatch(ctx, app.Services.Layout); w != "" {
			return agenthooks.Warn(w)
		}
	case agenthooks.EndTurn:
		res, err := svc.EndTurn(ctx, sess)
		if err != nil && !errors.Is(err, fault.ErrNotFound) { // a session that never changed anything
			return h.hookFailure(root, ev, err)
		}
		// The retention policy (.plan/config.yaml) runs at the end of each turn, as after each
		// `plan run`.
		if err == nil && res.Checkpoint != nil {
			if _, _, perr := app.Services.Maintenance.ApplyRetention(ctx); perr != nil {
				return agenthooks.Warn("retention policy: " + perr.Error())
			}
		}
	}
	return agenthooks.Allow()
}

// hookFailure is the answer when plan could not do what ev asked: by default a warning that lets
// the agent go on (its safety net must never break it); with hooks.fail_closed a pre-tool event
// blocks the call with the reason.
func (h *handler) hookFailure(root string, ev agenthooks.Event, err error) agenthooks.Reply {
	what := "could not record the " + ev.Name + " event"
	if ev.Action == agenthooks.BeforeTool {
		what = fmt.Sprintf("could not checkpoint before the %s call %s", ev.Tool, ev.CallID)
	}
	if agenthooks.CanBlock(ev.Agent, ev.Name) && failClosed(root) {
		return agenthooks.Block(ev.Agent, ev.Name, what+", so it was blocked (hooks.fail_closed): "+err.Error())
	}
	return agenthooks.Warn(what + ": " + err.Error() + " (the agent goes on; hooks.fail_closed: true blocks instead)")
}

// reply writes r and ends the command with its exit code.
func (h *handler) reply(r agenthooks.Reply) error {
	_, _ = io.WriteString(h.r.Stdout, r.Stdout)
	_, _ = io.WriteString(h.r.Stderr, scrub(r.Stderr))
	if r.Code != 0 {
		return &silentExit{code: r.Code}
	}
	return nil
}

// isWorkspace says whether root holds a plan workspace.
func isWorkspace(root string) bool {
	l, err := bootstrap.NewLayout(root)
	if err != nil {
		return false
	}
	st, err := os.Stat(l.State())
	return err == nil && st.IsDir()
}

// hookWatchStopAfter is how long a service a hook started runs without being asked anything and
// without a change in the workspace: the next turn starts it again.
const hookWatchStopAfter = time.Hour

// ensureWatch starts the workspace's change-tracking service in the background when none answers,
// so that the hooks' checkpoints read only what changed (docs/agents.md): at the start of each
// turn, unless hooks.watch is false, PLAN_WATCH=0 is set, or the system cannot watch. It never
// waits for the service (its first walk runs under the workspace lock, as any command's would); a
// service that cannot be started is a warning, and the hooks walk as without it.
func (h *handler) ensureWatch(ctx context.Context, l bootstrap.Layout) string {
	if !h.r.StartWatch || h.getenv("PLAN_WATCH") == "0" || !bootstrap.WatchSupported() || !hookWatch(l) {
		return ""
	}
	if _, err := bootstrap.WatchQuery(ctx, l); err == nil {
		return ""
	}
	cmd, _, err := spawnWatch(l, watchArgs(bootstrap.WatchOptions{StopAfter: hookWatchStopAfter}))
	if err != nil {
		return "could not start plan watch (the checkpoints walk the workspace): " + err.Error()
	}
	_ = cmd.Process.Release()
	return ""
}

// hookWatch reads hooks.watch from the workspace's configuration: true unless it says false (an
// unreadable configuration starts nothing it did not ask for).
func hookWatch(l bootstrap.Layout) bool {
	f, err := bootstrap.LoadConfig(l.State())
	return err == nil && (f.Hooks == nil || f.Hooks.Watch == nil || *f.Hooks.Watch)
}

// failClosed reads hooks.fail_closed from the workspace's configuration: false when it is unset
// or cannot be read (an unreadable configuration fails open, as everything else does).
func failClosed(root string) bool {
	l, err := bootstrap.NewLayout(root)
	if err != nil {
		return false
	}
	f, err := bootstrap.LoadConfig(l.State())
	return err == nil && f.Hooks != nil && f.Hooks.FailClosed != nil && *f.Hooks.FailClosed
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func newSessionView(s application.SessionView) view.Session {
	v := view.Session{Plan: s.Plan, Agent: s.Agent, Session: s.ID, CreatedAt: s.CreatedAt.UTC(), Turns: []view.Turn{}}
	for _, t := range s.Turns {
		tv := view.Turn{
			Number: t.Number, Prompt: t.Prompt, StartCheckpoint: optional(string(t.Start)), EndCheckpoint: optional(string(t.End)),
			StartedAt: optTime(t.StartedAt), EndedAt: optTime(t.EndedAt), ToolCalls: []view.ToolCall{},
		}
		for _, c := range t.Calls {
			cv := view.ToolCall{
				ID: c.ID, Tool: c.Tool, Summary: c.Summary, Status: string(c.Status), Checkpoint: optional(string(c.Checkpoint)),
				StartedAt: c.StartedAt.UTC(), FinishedAt: optTime(c.FinishedAt), Files: []view.ChangeFile{},
			}
			for _, a := range c.Changed {
				cv.Files = append(cv.Files, view.ChangeFile{Path: a.Path, Change: string(a.Change)})
			}
			tv.ToolCalls = append(tv.ToolCalls, cv)
		}
		v.Turns = append(v.Turns, tv)
	}
	return v
}

func (h *handler) sessions(c *ucli.Context) error {
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		ss, err := app.Services.Agents.Sessions(c.Context, c.Args().First())
		if err != nil {
			return err
		}
		v := view.Sessions{Sessions: []view.Session{}}
		for _, s := range ss {
			v.Sessions = append(v.Sessions, newSessionView(s))
		}
		return h.emit(v, func(w io.Writer) { writeSessions(w, v) })
	})
}

func writeSessions(w io.Writer, v view.Sessions) {
	if len(v.Sessions) == 0 {
		_, _ = fmt.Fprintln(w, "No agent session is recorded (see docs/agents.md to install the hooks).")
		return
	}
	for i, s := range v.Sessions {
		if i > 0 {
			_, _ = fmt.Fprintln(w)
		}
		_, _ = fmt.Fprintf(w, "%s  (%s session %s, started %s)\n", quote(s.Plan), quote(s.Agent), quote(s.Session), localTime(s.CreatedAt))
		for _, t := range s.Turns {
			prompt := quote(t.Prompt)
			if prompt == "" {
				prompt = "(no prompt recorded)"
			}
			if t.Number == 0 {
				_, _ = fmt.Fprintln(w, "  outside any turn")
			} else {
				_, _ = fmt.Fprintf(w, "  turn %d  %s\n", t.Number, prompt)
			}
			for _, tc := range t.ToolCalls {
				files := make([]string, 0, len(tc.Files))
				for _, f := range tc.Files {
					files = append(files, quote(f.Path))
				}
				changed := "no file changed"
				switch {
				case len(files) > 3:
					changed = fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
				case len(files) > 0:
					changed = strings.Join(files, ", ")
				}
				_, _ = fmt.Fprintf(w, "    %s  %-10s %s  %s  [%s]\n      %s\n", tc.StartedAt.Local().Format("15:04:05"), tc.Status, quote(tc.ID), quote(tc.Summary), quote(tc.Tool), changed)
			}
		}
	}
}

func (h *handler) rewind(c *ucli.Context) error {
	session := c.String("session")
	if session == "" {
		return usagef("missing --session S (`plan sessions` lists them)")
	}
	n, id := c.Int("turn"), c.String("tool-call")
	if c.IsSet("turn") == (id != "") {
		return usagef("give --turn N or --tool-call ID, one of them")
	}
	if c.IsSet("turn") && n < 1 {
		return fault.Invalid("--turn must be 1 or more, not %d", n)
	}
	mode := application.RestoreBoth
	picked := 0
	for _, m := range []struct {
		flag string
		mode application.RestoreMode
	}{{"files", application.RestoreFiles}, {"state", application.RestoreState}, {"both", application.RestoreBoth}} {
		if c.Bool(m.flag) {
			mode = m.mode
			picked++
		}
	}
	if picked > 1 {
		return usagef("give one of --files, --state and --both")
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		target, sv, err := app.Services.Agents.RewindTarget(c.Context, session, n, id)
		if err != nil {
			return err
		}
		paths, err := h.workspacePaths(app.Services.Layout.Root, c.Args().Slice())
		if err != nil {
			return err
		}
		svc := app.Services.Checkpoints
		req := application.RollbackRequest{Ref: string(target), Mode: mode, Paths: paths, DryRun: true}
		if !dry && !h.yes {
			preview, err := svc.Rollback(c.Context, req)
			if err != nil {
				return err
			}
			if err := h.confirm("rewind", rollbackSummary(preview)); err != nil {
				return err
			}
		}
		req.DryRun, req.Progress, req.Warn = dry, h.progress(), h.warn
		if h.op != nil {
			h.op.rec.SetPlan(sv.Plan) // the session's plan, which need not be the current one
		}
		res, err := svc.Rollback(c.Context, req)
		if err != nil {
			return err
		}
		v := view.Rewind{Rollback: newRollbackView(res, res.Kept), Session: sv.Plan}
		v.Paths = paths
		what := ""
		if n > 0 {
			v.Turn, what = &n, fmt.Sprintf("turn %d", n)
		} else {
			v.ToolCall, what = &id, "tool call "+quote(id)
		}
		for _, k := range res.Kept {
			h.warn(fmt.Sprintf("left %q as it is: it holds data outside every snapshot (ignored)", k))
		}
		return h.emit(v, func(w io.Writer) {
			if dry {
				_, _ = fmt.Fprintf(w, "Rewinding %s to before %s:\n", quote(sv.Plan), what)
				_, _ = io.WriteString(w, rollbackSummary(res))
				return
			}
			switch mode {
			case application.RestoreState:
				_, _ = fmt.Fprintf(w, "Rewound the decision states of %s to before %s (checkpoint %s); the files were left as they are.\n", quote(sv.Plan), what, res.Target.ID())
			default:
				_, _ = fmt.Fprintf(w, "Rewound %s to before %s (checkpoint %s): %d added, %d modified, %d deleted.\n",
					quote(sv.Plan), what, res.Target.ID(), res.Counts.Added, res.Counts.Modified, res.Counts.Deleted)
			}
			if len(res.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(quoteEach(res.RevertedDecisions), ", "))
			}
			if res.Backup != nil {
				_, _ = fmt.Fprintln(w, "Undo with: plan undo")
			}
		})
	})
}
