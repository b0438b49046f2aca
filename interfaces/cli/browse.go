package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/tui"
)

// plainCommands is what plan browse points at when there is no terminal to draw on.
const plainCommands = "`plan history`, `plan sessions`, `plan checkpoint list` and `plan diff FROM [TO]`"

func (h *handler) browseCommand() *ucli.Command {
	return &ucli.Command{
		Name: "browse", Usage: "the workspace's timeline, full screen: preview any entry, rewind to before it, undo, redo",
		Description: "A terminal program (keys as in less, tig and lazygit; ? shows them). Each action shows its dry run and\n" +
			"asks first, then runs the plain command (plan rollback, undo, redo): it is logged in plan history and\n" +
			"plan undo takes it back. Needs a terminal on stdin and stdout; without one, exit 2 (the plain commands\n" +
			"show the same: " + plainCommands + "). See docs/browse.md.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "session", Usage: "only the agent session `ID`'s entries"},
			&ucli.StringFlag{Name: "plan", Usage: "only the plan `NAME`'s entries"},
			&ucli.DurationFlag{Name: "poll", Value: time.Second, Usage: "read the timeline again every `DURATION` for new entries (0: never)"},
		},
		Action: h.browse,
	}
}

func (h *handler) browse(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	if h.json {
		return usagef("plan browse draws on a terminal and prints no JSON: for documents use %s with --json", plainCommands)
	}
	if !h.r.Interactive || !h.r.OutputTerminal {
		return usagef("plan browse needs a terminal on stdin and stdout; without one, the plain commands show the same: %s", plainCommands)
	}
	if c.Duration("poll") < 0 {
		return usagef("--poll %s: a duration of zero (never) or more", c.Duration("poll"))
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		src := &browseSource{h: h, app: app, first: app, root: app.Services.Layout.Root, diffs: map[string][]tree.Change{}}
		defer src.close()
		m := tui.New(c.Context, src, tui.Options{Title: quote(src.root), Color: h.colors.on, Poll: c.Duration("poll"),
			Session: c.String("session"), Plan: c.String("plan")})
		opts := []tea.ProgramOption{tea.WithContext(c.Context), tea.WithInput(h.r.Stdin), tea.WithOutput(h.r.Stdout)}
		if f, ok := h.r.Stdout.(*os.File); !ok || !isTerminal(f) {
			// A host's stream (a test's) has no size to ask for: drawn at the contract's 80x24.
			opts = append(opts, tea.WithWindowSize(80, 24))
		}
		opts = append(opts, tea.WithColorProfile(h.colorProfile()))
		return runProgram(c.Context, tea.NewProgram(m, opts...))
	})
}

// colorProfile is the colours the program paints with: none with colour off (NO_COLOR,
// --color=never); with colour on, what the terminal says it has, and at least the 16 of ANSI
// (--color=always on a stream that is not a terminal).
func (h *handler) colorProfile() colorprofile.Profile {
	if !h.colors.on {
		return colorprofile.ASCII
	}
	env := []string{"TERM=" + h.getenv("TERM"), "COLORTERM=" + h.getenv("COLORTERM")}
	return max(colorprofile.Detect(h.r.Stdout, env), colorprofile.ANSI)
}

// runProgram runs the full-screen program; bubbletea restores the terminal however it ends (a
// quit, SIGTERM or ^C through ctx, a panic it caught), and this says how it ended.
func runProgram(ctx context.Context, p *tea.Program) error {
	_, err := p.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, tea.ErrProgramPanic):
		return fmt.Errorf("plan browse failed (the terminal was restored): %w", err)
	}
	return fmt.Errorf("plan browse: %w", err)
}

// browseSource is the browser's view of the workspace: the timeline from the checkpoints and the
// operation log, changes and diffs from the checkpoint service (as plan diff), actions by running
// the plain commands in this process (so they are logged, locked and undone as typed ones are).
type browseSource struct {
	h    *handler
	root string

	// open guards app: readers hold it shared while they use it, a reopen exclusively. app is
	// opened again when the timeline grew, so that it reads what other processes wrote since;
	// first is the one the command opened (and closes).
	open  sync.RWMutex
	app   *bootstrap.App
	first *bootstrap.App
	sig   string

	mu sync.Mutex
	// next maps a checkpoint to the next newer one (what its changes are measured to; "" is the
	// workspace) as the latest Load found them.
	next map[string]string
	// diffs keeps the changes of the entries opened or counted since the last Load.
	diffs map[string][]tree.Change
}

// shownKinds are the operation log's kinds the timeline shows: those that changed the workspace
// and are not a checkpoint of their own already (a decision's and a checkpoint's are).
var shownKinds = map[string]bool{
	"rollback": true, "correct": true, "revert": true, "undo": true, "redo": true, "resolve": true,
	"recover": true, "run": true, "exec": true, "clone": true,
}

// Load reads every checkpoint and logged operation, newest first. Counts and diffs are left for
// the entries on screen (Counts, Changes).
func (s *browseSource) Load(ctx context.Context) (tui.Snapshot, error) {
	cps, ops, err := s.list(ctx)
	if sig := signature(cps, ops); err == nil && s.sig != "" && sig != s.sig {
		// Other processes wrote since: an application opened now reads their objects too.
		if err = s.reopen(ctx); err == nil {
			cps, ops, err = s.list(ctx)
		}
	}
	if err != nil {
		return tui.Snapshot{}, err
	}
	s.sig = signature(cps, ops)
	shorts := application.ShortNamesOf(cps)
	entries := make([]tui.Entry, 0, len(cps)+len(ops))
	byTime := slices.Clone(cps)
	slices.SortStableFunc(byTime, func(a, b *checkpoint.Checkpoint) int { return b.CreatedAt().Compare(a.CreatedAt()) })
	next := make(map[string]string, len(byTime))
	for i, cp := range byTime {
		if i > 0 {
			next[string(cp.ID())] = string(byTime[i-1].ID())
		} else {
			next[string(cp.ID())] = ""
		}
		entries = append(entries, checkpointEntry(cp, shorts[cp.ID()]))
	}
	for _, op := range ops {
		if shownKinds[op.Kind] {
			entries = append(entries, operationEntry(op))
		}
	}
	slices.SortStableFunc(entries, func(a, b tui.Entry) int { return b.Time.Compare(a.Time) })
	s.mu.Lock()
	s.next, s.diffs = next, map[string][]tree.Change{}
	s.mu.Unlock()
	snap := tui.Snapshot{Entries: entries}
	s.open.RLock()
	op, err := s.app.Services.Maintenance.Interrupted()
	s.open.RUnlock()
	if err == nil && op != nil {
		snap.Pending = fmt.Sprintf("an interrupted %s (%s) is pending: `plan recover` finishes it", op.Kind, op.ID)
	}
	return snap, nil
}

func (s *browseSource) list(ctx context.Context) ([]*checkpoint.Checkpoint, []port.LoggedOperation, error) {
	s.open.RLock()
	defer s.open.RUnlock()
	cps, err := s.app.Services.Checkpoints.List(ctx)
	ops, oerr := s.app.Services.History.List(ctx, 0, "")
	return cps, ops, errors.Join(err, oerr)
}

// signature changes when the timeline does: a checkpoint or a log entry added, deleted or undone.
func signature(cps []*checkpoint.Checkpoint, ops []port.LoggedOperation) string {
	sig := fmt.Sprintf("%d/%d", len(cps), len(ops))
	if n := len(cps); n > 0 {
		sig += "/" + string(cps[0].ID()) + "/" + string(cps[n-1].ID())
	}
	for _, op := range ops {
		if op.UndoneBy != "" {
			sig += "/" + op.ID
		}
	}
	return sig
}

// reopen replaces the application with a new one.
func (s *browseSource) reopen(ctx context.Context) error {
	app, err := s.h.open(ctx, false)
	if err != nil {
		return err
	}
	s.open.Lock()
	old := s.app
	s.app = app
	s.open.Unlock()
	if old != s.first {
		_ = old.Close()
	}
	return nil
}

// close closes the application the browser opened itself, if any.
func (s *browseSource) close() {
	if s.app != s.first {
		_ = s.app.Close()
	}
}

// checkpointKinds names checkpoint types in the timeline's words.
var checkpointKinds = map[checkpoint.Type]string{
	checkpoint.PreDecision: "decision", checkpoint.PreRollback: "rollback", checkpoint.PreCorrection: "correction",
	checkpoint.Manual: "manual", checkpoint.TurnStart: "turn start", checkpoint.TurnEnd: "turn end",
	checkpoint.PreRecover: "recover", checkpoint.PostRun: "run end", checkpoint.SafeState: "safe state",
	checkpoint.PreRiskyOperation: "risky op", checkpoint.Milestone: "milestone", checkpoint.Clone: "clone",
	checkpoint.Periodic: "periodic", checkpoint.Idle: "idle",
}

func checkpointEntry(cp *checkpoint.Checkpoint, short string) tui.Entry {
	labels := cp.Labels()
	e := tui.Entry{Key: "cp:" + string(cp.ID()), Time: cp.CreatedAt(), Kind: checkpointKinds[cp.Type()], ID: cmp.Or(short, string(cp.ID())),
		Rewind: string(cp.ID()), Summary: cp.Note(), HasChanges: true, Plan: labels["plan"]}
	if e.Kind == "" {
		e.Kind = string(cp.Type())
	}
	agent, session := labels[application.LabelAgent], labels[application.LabelSession]
	switch {
	case agent != "" && labels[application.LabelTool] != "":
		e.Kind, e.Who = "tool call", agent+" "+labels[application.LabelTool]
	case agent != "":
		e.Who = agent + " turn " + labels[application.LabelTurn]
	case cp.DecisionID() != "":
		e.Who = cp.DecisionID()
	}
	if agent != "" {
		e.Session, e.Plan = session, application.SessionPlanName(agent, session)
	}
	if cp.Pinned() {
		e.Flag = "pinned"
	}
	return e
}

func operationEntry(op port.LoggedOperation) tui.Entry {
	e := tui.Entry{Key: "op:" + op.ID, Time: op.StartedAt, Kind: op.Kind, Who: op.Plan, ID: op.ID,
		Summary: "plan " + shellJoin(op.Args), Rewind: string(op.UndoCheckpoint), Plan: op.Plan}
	switch {
	case op.UndoneBy != "":
		e.Flag = "undone"
	case op.Outcome != application.OutcomeOK:
		e.Flag = op.Outcome
	}
	return e
}

// changes are the entry's changes: from its checkpoint to the next newer one, or to the workspace
// for the newest, as plan diff computes them.
func (s *browseSource) changes(ctx context.Context, e tui.Entry) ([]tree.Change, bool, error) {
	s.mu.Lock()
	ch, ok := s.diffs[e.Key]
	to, known := s.next[e.Rewind]
	s.mu.Unlock()
	if !known {
		return nil, false, fmt.Errorf("checkpoint %s is gone: the timeline was read again", e.ID)
	}
	if ok {
		return ch, to == "", nil
	}
	s.open.RLock()
	res, err := s.app.Services.Checkpoints.Diff(ctx, e.Rewind, to, nil)
	s.open.RUnlock()
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	s.diffs[e.Key] = res.Changes
	s.mu.Unlock()
	return res.Changes, to == "", nil
}

// Changes lists the entry's changed paths.
func (s *browseSource) Changes(ctx context.Context, e tui.Entry) ([]tui.Change, error) {
	chs, _, err := s.changes(ctx, e)
	if err != nil {
		return nil, err
	}
	out := make([]tui.Change, 0, len(chs))
	for _, ch := range chs {
		out = append(out, tui.Change{Letter: ch.Type.Letter(), Path: ch.Path})
	}
	return out, nil
}

// Counts counts the entry's changed files as a rollback reports them.
func (s *browseSource) Counts(ctx context.Context, e tui.Entry) (tui.Counts, error) {
	chs, _, err := s.changes(ctx, e)
	if err != nil {
		return tui.Counts{}, err
	}
	c := application.Count(chs)
	return tui.Counts{Added: c.Added, Modified: c.Modified, Deleted: c.Deleted}, nil
}

// Patch is one path's diff, as plan diff --patch prints it.
func (s *browseSource) Patch(ctx context.Context, e tui.Entry, path string) (string, error) {
	chs, live, err := s.changes(ctx, e)
	if err != nil {
		return "", err
	}
	for _, ch := range chs {
		if ch.Path == path {
			s.open.RLock()
			defer s.open.RUnlock()
			p, err := patch(s.app.Services.Checkpoints, ch, live)
			return p.text, err
		}
	}
	return "", fmt.Errorf("%s did not change in this entry", quote(path))
}

// command is the plain command an action runs.
func command(a tui.Action, dry bool) []string {
	var args []string
	switch a.Kind {
	case tui.Rewind:
		args = []string{"rollback", "--to-checkpoint", a.Entry.Rewind}
	default:
		args = []string{string(a.Kind)}
	}
	if dry {
		return append(args, "--dry-run")
	}
	return append([]string{"--yes"}, args...)
}

// DryRun runs the action's command with --dry-run.
func (s *browseSource) DryRun(ctx context.Context, a tui.Action) tui.Outcome {
	return s.run(ctx, command(a, true))
}

// Do runs the action's command, confirmed.
func (s *browseSource) Do(ctx context.Context, a tui.Action) tui.Outcome {
	return s.run(ctx, command(a, false))
}

// run runs a plain command in this process, as typed in the workspace, and reports what it said.
func (s *browseSource) run(ctx context.Context, args []string) tui.Outcome {
	var out bytes.Buffer
	r := &Runner{Stdout: &out, Stderr: &out, Stdin: strings.NewReader(""), Getenv: s.h.r.Getenv, Version: s.h.r.Version, Dir: s.root}
	code := r.Run(ctx, append([]string{"plan"}, args...))
	text := strings.ReplaceAll(out.String(), "plan: ", "")
	o := tui.Outcome{Text: text, Failed: code != ExitOK}
	o.Busy = code == ExitConflict && strings.Contains(text, "busy")
	return o
}
