package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/tui"
)

// Without a terminal on stdin and stdout, plan browse is a usage error that names the plain commands.
func TestBrowseNeedsATerminal(t *testing.T) {
	dir := newWorkspace(t)
	for _, r := range []Runner{{}, {Interactive: true}, {OutputTerminal: true}} {
		o := invoke(r, "-C", dir, "browse")
		if o.code != ExitUsage || o.stdout != "" {
			t.Fatalf("%+v: %v", r, o)
		}
		for _, want := range []string{"needs a terminal on stdin and stdout", "`plan history`", "`plan sessions`", "`plan diff FROM [TO]`"} {
			if !strings.Contains(o.stderr, want) {
				t.Fatalf("the refusal lacks %q: %v", want, o)
			}
		}
	}
	tty := Runner{Interactive: true, OutputTerminal: true}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--json", "browse"}, "prints no JSON"},
		{[]string{"browse", "--poll", "-1s"}, "--poll -1s"},
		{[]string{"browse", "extra"}, `unexpected argument "extra"`},
	} {
		if o := invoke(tty, append([]string{"-C", dir}, c.args...)...); o.code != ExitUsage || !strings.Contains(o.stderr, c.want) {
			t.Fatalf("%q: %v", c.args, o)
		}
	}
}

// The program runs in this process on streams that are not terminals: it draws the timeline and
// quits on q, with colour off (NO_COLOR) and on (--color=always).
func TestBrowseRunsAndQuits(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	createCheckpoint(t, dir, "--note", "the first")
	for _, c := range []struct {
		args  []string
		env   map[string]string
		paint bool
	}{
		{[]string{"browse", "--poll", "0"}, map[string]string{"NO_COLOR": "1"}, false},
		{[]string{"--color=always", "browse"}, nil, true},
	} {
		in, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, _ = w.WriteString("q")
		}()
		env := c.env
		o := invoke(Runner{Interactive: true, OutputTerminal: true, Stdin: in, Getenv: func(k string) string { return env[k] }},
			append([]string{"-C", dir}, c.args...)...)
		_ = w.Close()
		_ = in.Close()
		if o.code != ExitOK || !strings.Contains(o.stdout, "the first") {
			t.Fatalf("%q: %v", c.args, o)
		}
		if painted := strings.Contains(o.stdout, "\x1b[7m") || strings.Contains(o.stdout, "\x1b[1;7m"); painted != c.paint {
			t.Fatalf("%q: painted %v, want %v:\n%q", c.args, painted, c.paint, o.stdout)
		}
	}
}

type idleModel struct{}

func (idleModel) Init() tea.Cmd                         { return nil }
func (m idleModel) Update(tea.Msg) (tea.Model, tea.Cmd) { return m, nil }
func (idleModel) View() tea.View                        { return tea.NewView("x") }

type panicModel struct{}

func (panicModel) Init() tea.Cmd                       { return nil }
func (panicModel) Update(tea.Msg) (tea.Model, tea.Cmd) { panic("boom") }
func (panicModel) View() tea.View                      { return tea.NewView("x") }

// However the program ends, runProgram says how: a panic (the terminal restored), a cancelled
// context (SIGTERM, ^C), a program killed.
func TestRunProgramEnds(t *testing.T) {
	opts := func(ctx context.Context) []tea.ProgramOption {
		return []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(&strings.Builder{})}
	}
	p := tea.NewProgram(panicModel{}, opts(context.Background())...)
	go p.Send(struct{}{})
	if err := runProgram(context.Background(), p); err == nil || !strings.Contains(err.Error(), "the terminal was restored") {
		t.Fatalf("a panic: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p = tea.NewProgram(idleModel{}, opts(ctx)...)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := runProgram(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context: %v", err)
	}
	p = tea.NewProgram(idleModel{}, opts(context.Background())...)
	go func() { time.Sleep(50 * time.Millisecond); p.Kill() }()
	if err := runProgram(context.Background(), p); err == nil || !strings.Contains(err.Error(), "plan browse:") {
		t.Fatalf("killed: %v", err)
	}
}

// source opens dir as plan browse does.
func source(t *testing.T, dir string) *browseSource {
	t.Helper()
	h := &handler{r: &Runner{Getenv: withDataDir(func(string) string { return "" })}, root: dir}
	app, err := h.open(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := &browseSource{h: h, app: app, first: app, root: app.Services.Layout.Root, diffs: map[string][]tree.Change{}}
	t.Cleanup(func() {
		s.close()
		_ = app.Close()
	})
	return s
}

func load(t *testing.T, s *browseSource) []tui.Entry {
	t.Helper()
	snap, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Entries
}

func find(t *testing.T, es []tui.Entry, kind, summary string) tui.Entry {
	t.Helper()
	for _, e := range es {
		if e.Kind == kind && strings.Contains(e.Summary, summary) {
			return e
		}
	}
	t.Fatalf("no %s entry %q in %+v", kind, summary, es)
	return tui.Entry{}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".plan" {
				return filepath.SkipDir
			}
			return err
		}
		b, err := os.ReadFile(p) // #nosec -- the test's own workspace
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The source reads the timeline, counts and diffs entries as plan diff does, and runs actions as
// the plain commands: a dry run changes nothing, the rewind is logged and undone by plan undo.
func TestBrowseSourceTimelineAndActions(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	createCheckpoint(t, dir, "--note", "first")
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	writeFile(t, dir, "b.bin", "\x00\x01binary")
	createCheckpoint(t, dir, "--note", "second")
	mustPlan(t, dir, "checkpoint", "pin", createCheckpoint(t, dir, "--note", "third"))
	writeFile(t, dir, "c.txt", "new\n")
	s := source(t, dir)
	ctx := context.Background()

	es := load(t, s)
	if len(es) != 3 || es[0].Summary != "third" || es[2].Summary != "first" || es[0].Flag != "pinned" || es[1].Kind != "manual" {
		t.Fatalf("not the three checkpoints newest first: %+v", es)
	}
	first, third := es[2], es[0]
	if c, err := s.Counts(ctx, first); err != nil || c != (tui.Counts{Added: 1, Modified: 1}) {
		t.Fatalf("first's counts: %+v %v", c, err)
	}
	if c, err := s.Counts(ctx, third); err != nil || c != (tui.Counts{Added: 1}) { // to the workspace
		t.Fatalf("the newest's counts (to the workspace): %+v %v", c, err)
	}
	chs, err := s.Changes(ctx, first)
	if err != nil || !slices.Equal(chs, []tui.Change{{Letter: "M", Path: "a.txt"}, {Letter: "A", Path: "b.bin"}}) {
		t.Fatalf("first's changes: %+v %v", chs, err)
	}
	if p, err := s.Patch(ctx, first, "a.txt"); err != nil || !strings.Contains(p, "+two") {
		t.Fatalf("a.txt's patch: %q %v", p, err)
	}
	if p, err := s.Patch(ctx, first, "b.bin"); err != nil || !strings.Contains(p, "Binary or large file") {
		t.Fatalf("b.bin's patch: %q %v", p, err)
	}
	if p, err := s.Patch(ctx, third, "c.txt"); err != nil || !strings.Contains(p, "+new") {
		t.Fatalf("c.txt's patch, from the workspace: %q %v", p, err)
	}
	if _, err := s.Patch(ctx, first, "nope"); err == nil || !strings.Contains(err.Error(), "did not change") {
		t.Fatalf("a path that did not change: %v", err)
	}
	gone := first
	gone.Rewind = "0000"
	for _, err := range []error{errOf(s.Changes(ctx, gone)), errOf(s.Counts(ctx, gone)), errOf(s.Patch(ctx, gone, "a.txt"))} {
		if err == nil || !strings.Contains(err.Error(), "is gone") {
			t.Fatalf("a checkpoint gone: %v", err)
		}
	}

	before := readTree(t, dir)
	rewind := tui.Action{Kind: tui.Rewind, Entry: first}
	if o := s.DryRun(ctx, rewind); o.Failed || !strings.Contains(o.Text, "Rolling back") || !strings.Contains(o.Text, "c.txt") {
		t.Fatalf("the rewind's dry run: %+v", o)
	}
	if after := readTree(t, dir); !mapsEqual(before, after) {
		t.Fatal("a dry run changed the workspace")
	}
	if o := s.Do(ctx, rewind); o.Failed {
		t.Fatalf("the rewind: %+v", o)
	}
	if got := readTree(t, dir); len(got) != 1 || got[filepath.Join(dir, "a.txt")] != "one\n" {
		t.Fatalf("not rewound to first: %v", got)
	}
	es = load(t, s) // the timeline grew: read with a new application
	if s.app == s.first {
		t.Fatal("the application was not opened again")
	}
	op := find(t, es, "rollback", "plan --yes rollback --to-checkpoint")
	if op.HasChanges || op.Rewind == "" {
		t.Fatalf("the rollback's log entry: %+v", op)
	}
	find(t, es, "rollback", "") // its pre_rollback checkpoint
	if o := mustPlan(t, dir, "history"); !strings.Contains(o.stdout, "rollback --to-checkpoint") {
		t.Fatalf("the rewind is not in plan history: %v", o)
	}

	if o := s.Do(ctx, tui.Action{Kind: tui.Undo}); o.Failed || !mapsEqual(readTree(t, dir), before) {
		t.Fatalf("undo did not take the rewind back: %+v", o)
	}
	es = load(t, s)
	if e := find(t, es, "rollback", "plan --yes rollback"); e.Flag != "undone" {
		t.Fatalf("the undone rollback is not flagged: %+v", e)
	}
	find(t, es, "undo", "")
	if o := s.DryRun(ctx, tui.Action{Kind: tui.Redo}); o.Failed || !strings.Contains(strings.ToLower(o.Text), "redo") {
		t.Fatalf("the redo's dry run: %+v", o)
	}
	if o := s.Do(ctx, tui.Action{Kind: tui.Redo}); o.Failed {
		t.Fatalf("redo: %+v", o)
	}
	if o := s.DryRun(ctx, tui.Action{Kind: tui.Redo}); !o.Failed || o.Busy {
		t.Fatalf("a second redo: %+v", o)
	}

	// The workspace's lock held by another: the action is refused as busy, and may be retried.
	unlock := bootstrap.TestLock(t, dir)
	o := s.Do(ctx, tui.Action{Kind: tui.Undo})
	_ = unlock()
	if !o.Failed || !o.Busy || !strings.Contains(o.Text, "busy") {
		t.Fatalf("a held lock: %+v", o)
	}
	if o := s.Do(ctx, tui.Action{Kind: tui.Undo}); o.Failed {
		t.Fatalf("the retry: %+v", o)
	}
}

// An agent's tool calls and turns are entries of their own, filtered by session.
func TestBrowseSourceAgentSession(t *testing.T) {
	dir := claudeTurn(t)
	es := load(t, source(t, dir))
	call := find(t, es, "tool call", "")
	if !strings.HasPrefix(call.Who, "claude ") || call.Session == "" || call.Plan != "claude-"+call.Session {
		t.Fatalf("a tool call: %+v", call)
	}
	if turn := find(t, es, "turn start", ""); turn.Who != "claude turn 1" || turn.Session != call.Session {
		t.Fatalf("a turn: %+v", turn)
	}
}

func errOf[T any](_ T, err error) error { return err }

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A checkpoint of a kind the timeline has no word for shows its type; a decision's, its ID; a log
// entry that failed, its outcome.
func TestBrowseEntries(t *testing.T) {
	cp := checkpoint.Rehydrate(checkpoint.Params{ID: "01abc", Type: "future", DecisionID: "build", CreatedAt: time.Now()}, 0)
	if e := checkpointEntry(cp, ""); e.Kind != "future" || e.Who != "build" || e.ID != "01abc" {
		t.Fatalf("%+v", e)
	}
	op := port.LoggedOperation{ID: "op1", Kind: "revert", Outcome: "conflict", Args: []string{"revert", "d1"}}
	if e := operationEntry(op); e.Flag != "conflict" || e.Summary != "plan revert d1" || e.Rewind != "" {
		t.Fatalf("%+v", e)
	}
}

// What the source cannot read it says: a checkpoint deleted since the load, a workspace that cannot
// be opened again; an operation a crash interrupted is flagged.
func TestBrowseSourceFailuresAndPending(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	target := createCheckpoint(t, dir, "--note", "target")
	createCheckpoint(t, dir, "--note", "newer")
	s := source(t, dir)
	es := load(t, s)
	mustPlan(t, dir, "checkpoint", "delete", target)
	if _, err := s.Changes(context.Background(), find(t, es, "manual", "target")); err == nil {
		t.Fatal("the changes of a deleted checkpoint")
	}
	root := s.h.root
	s.h.root = t.TempDir() // not a workspace: the application cannot be opened again
	if _, err := s.Load(context.Background()); err == nil {
		t.Fatal("a timeline that grew, read without a workspace")
	}
	s.h.root = root

	back := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "changed\n")
	writeFile(t, dir, "b.txt", "new\n")
	crash(t, "restore.removed", "-C", dir, "--yes", "rollback", "--to-checkpoint", back)
	snap, err := s.Load(context.Background())
	if err != nil || !strings.Contains(snap.Pending, "an interrupted rollback") || !strings.Contains(snap.Pending, "plan recover") {
		t.Fatalf("the pending rollback: %q %v", snap.Pending, err)
	}
}
