package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// fakeSource is a timeline in memory; it records the actions it was asked to run.
type fakeSource struct {
	mu       sync.Mutex
	snap     Snapshot
	loadErr  error
	changes  map[string][]Change
	countErr error
	patches  map[string]string
	patchErr error
	dry      Outcome
	do       []Outcome // answered in turn, the last one again
	asked    []string  // "dry rewind", "do undo", …
}

func (f *fakeSource) Load(context.Context) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, f.loadErr
}

func (f *fakeSource) Changes(_ context.Context, e Entry) ([]Change, error) {
	if f.countErr != nil {
		return nil, f.countErr
	}
	return f.changes[e.Key], nil
}

func (f *fakeSource) Counts(_ context.Context, e Entry) (Counts, error) {
	if f.countErr != nil {
		return Counts{}, f.countErr
	}
	var c Counts
	for _, ch := range f.changes[e.Key] {
		switch ch.Letter {
		case "A":
			c.Added++
		case "D":
			c.Deleted++
		default:
			c.Modified++
		}
	}
	return c, nil
}

func (f *fakeSource) Patch(_ context.Context, _ Entry, path string) (string, error) {
	return f.patches[path], f.patchErr
}

func (f *fakeSource) DryRun(_ context.Context, a Action) Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "dry "+string(a.Kind)+" "+a.Entry.Rewind)
	return f.dry
}

func (f *fakeSource) Do(_ context.Context, a Action) Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "do "+string(a.Kind)+" "+a.Entry.Rewind)
	o := f.do[0]
	if len(f.do) > 1 {
		f.do = f.do[1:]
	}
	return o
}

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func entries(n int) []Entry {
	out := make([]Entry, 0, n)
	for i := n - 1; i >= 0; i-- {
		out = append(out, Entry{Key: fmt.Sprintf("cp:%d", i), Time: t0.Add(time.Duration(i) * time.Minute), Kind: "tool call",
			Who: "claude Edit", Summary: fmt.Sprintf("edit number %d", i), ID: fmt.Sprintf("id%d", i), Rewind: fmt.Sprintf("cp%d", i),
			Session: "s1", Plan: "claude-s1", HasChanges: true})
	}
	return out
}

func newFake(n int) *fakeSource {
	f := &fakeSource{snap: Snapshot{Entries: entries(n)}, changes: map[string][]Change{}, patches: map[string]string{},
		dry: Outcome{Text: "Rolling back to cp would modify 1 file:\n  M a.txt\n"}, do: []Outcome{{Text: "Rolled back to cp\n"}}}
	for _, e := range f.snap.Entries {
		f.changes[e.Key] = []Change{{"M", "a.txt"}, {"A", "b.txt"}, {"D", "c.txt"}}
	}
	f.patches["a.txt"] = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n\tindented \x1b[31mred\n"
	return f
}

// driver runs a model as the program would: every command's message fed back, until none is left.
type driver struct {
	t    *testing.T
	m    tea.Model
	quit bool
}

func start(t *testing.T, src Source, opts Options) *driver {
	t.Helper()
	d := &driver{t: t, m: New(context.Background(), src, opts)}
	d.run(d.m.Init())
	return d
}

func (d *driver) run(cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			d.quit = true
		default:
			var next tea.Cmd
			d.m, next = d.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func (d *driver) send(msg tea.Msg) {
	var cmd tea.Cmd
	d.m, cmd = d.m.Update(msg)
	d.run(cmd)
}

func (d *driver) keys(ks ...string) {
	for _, k := range ks {
		d.send(press(k))
	}
}

func (d *driver) screen() string { return d.m.View().Content }

func (d *driver) model() Model { return d.m.(Model) }

func (d *driver) has(want ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range want {
		if !strings.Contains(s, w) {
			d.t.Fatalf("the screen lacks %q:\n%s", w, s)
		}
	}
}

func (d *driver) lacks(w string) {
	d.t.Helper()
	if s := d.screen(); strings.Contains(s, w) {
		d.t.Fatalf("the screen has %q:\n%s", w, s)
	}
}

var named = map[string]tea.Key{
	"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "space": {Code: tea.KeySpace, Text: " "},
	"down": {Code: tea.KeyDown}, "up": {Code: tea.KeyUp}, "backspace": {Code: tea.KeyBackspace},
	"ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "pgdown": {Code: tea.KeyPgDown}, "pgup": {Code: tea.KeyPgUp},
	"home": {Code: tea.KeyHome}, "end": {Code: tea.KeyEnd}, "left": {Code: tea.KeyLeft}, "right": {Code: tea.KeyRight},
	"ctrl+r": {Code: 'r', Mod: tea.ModCtrl}, "ctrl+d": {Code: 'd', Mod: tea.ModCtrl}, "ctrl+u": {Code: 'u', Mod: tea.ModCtrl},
}

func press(k string) tea.KeyPressMsg {
	if key, ok := named[k]; ok {
		return tea.KeyPressMsg(key)
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

func TestTimelineNewestFirstWithCounts(t *testing.T) {
	d := start(t, newFake(3), Options{Title: "/w"})
	lines := strings.Split(d.screen(), "\n")
	if len(lines) != 24 {
		t.Fatalf("%d lines, want 24 (80x24)", len(lines))
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Fatalf("a line of %d columns: %q", n, l)
		}
	}
	d.has("plan browse  /w", "TIME", "edit number 2", "+1 ~1 -1", "claude Edit", "tool call")
	local := t0.Add(2 * time.Minute).Local().Format("01-02 15:04:05")
	if !strings.HasPrefix(lines[2], "> "+local) || !strings.Contains(lines[3], "edit number 1") {
		t.Fatalf("not newest first, cursor on the newest:\n%s", d.screen())
	}
	if strings.Contains(d.screen(), "\x1b[") {
		t.Fatal("colour off, yet the view holds an escape sequence")
	}
}

func TestColourOnPaints(t *testing.T) {
	d := start(t, newFake(2), Options{Color: true})
	if !strings.Contains(d.screen(), "\x1b[") {
		t.Fatalf("colour on, yet nothing painted:\n%q", d.screen())
	}
	d.keys("enter")
	if !strings.Contains(d.screen(), "\x1b[") {
		t.Fatal("the files screen is not painted")
	}
	d.keys("enter")
	if !strings.Contains(d.screen(), "\x1b[") {
		t.Fatal("the diff is not painted")
	}
}

func TestReadingAndEmpty(t *testing.T) {
	m := New(context.Background(), newFake(1), Options{})
	if !strings.Contains(m.View().Content, "reading the timeline") {
		t.Fatal("no sign of reading before the first load")
	}
	d := start(t, &fakeSource{}, Options{})
	d.has("no checkpoints or logged operations yet")
	d.keys("enter", "r", "j")
	if d.model().screen != scrList {
		t.Fatal("an empty timeline left the list")
	}
}

func TestMovingAndPaging(t *testing.T) {
	d := start(t, newFake(100), Options{})
	cur := func() int { return d.model().cursor }
	d.keys("j", "down", "j")
	if cur() != 3 {
		t.Fatalf("cursor %d after three downs", cur())
	}
	d.keys("k", "up")
	if cur() != 1 {
		t.Fatalf("cursor %d after two ups", cur())
	}
	d.keys("space")
	if cur() != 21 || d.model().top != 20 {
		t.Fatalf("space: cursor %d top %d", cur(), d.model().top)
	}
	d.keys("b", "pgdown", "pgup")
	if cur() != 1 {
		t.Fatalf("paging back: cursor %d", cur())
	}
	d.keys("G")
	if cur() != 99 {
		t.Fatalf("G: cursor %d", cur())
	}
	d.has("edit number 0")
	d.keys("g")
	if cur() != 0 || d.model().top != 0 {
		t.Fatal("g did not go to the top")
	}
	d.keys("end", "home", "k")
	if cur() != 0 {
		t.Fatal("moved above the first entry")
	}
}

// Counts are read for the entries on screen only, a page at a time.
func TestCountsLazily(t *testing.T) {
	f := newFake(10000)
	d := start(t, f, Options{})
	m := d.model()
	if n := len(m.asked); n != m.listRows() {
		t.Fatalf("counts asked for %d entries, want the %d on screen", n, m.listRows())
	}
	d.keys("space")
	if n := len(d.model().counts); n != 2*m.listRows() {
		t.Fatalf("after a page, %d counts", n)
	}
}

func TestCountsFailShowAQuestionMark(t *testing.T) {
	f := newFake(2)
	f.countErr = errors.New("gone")
	d := start(t, f, Options{})
	d.has("?")
	d.lacks("+1")
	d.keys("enter")
	d.has("changes: gone")
	if d.model().screen != scrList {
		t.Fatal("a failed change list did not return to the list")
	}
}

func TestResizeRedraws(t *testing.T) {
	d := start(t, newFake(50), Options{})
	d.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	if n := len(strings.Split(d.screen(), "\n")); n != 40 {
		t.Fatalf("%d lines after a resize to 40", n)
	}
	d.keys("G")
	d.send(tea.WindowSizeMsg{Width: 10, Height: 3})
	m := d.model()
	if m.width != 20 || m.height != 6 || m.cursor != 49 || m.top != 48 {
		t.Fatalf("tiny: %dx%d cursor %d top %d", m.width, m.height, m.cursor, m.top)
	}
	for _, l := range strings.Split(d.screen(), "\n") {
		if n := len([]rune(l)); n > 20 {
			t.Fatalf("a line of %d columns at width 20: %q", n, l)
		}
	}
}

func TestSearchFilters(t *testing.T) {
	d := start(t, newFake(30), Options{})
	d.keys("/", "n", "u", "m", "b", "e", "r", " ", "1", "7")
	d.has("/number 17", "edit number 17")
	d.lacks("edit number 16")
	d.keys("backspace", "backspace", "2", "enter")
	if d.model().typing {
		t.Fatal("enter did not end the search line")
	}
	d.has("edit number 20", "edit number 29")
	d.lacks("edit number 17")
	d.keys("/", "zzz")
	d.has("no entry matches /number 2zzz")
	d.keys("esc")
	if d.model().filter != "" || d.model().typing {
		t.Fatal("esc did not clear the search")
	}
	d.keys("/", "1", "enter", "esc") // esc outside the search line clears the filter first
	if d.quit || d.model().filter != "" {
		t.Fatalf("esc with a filter: quit %v, filter %q", d.quit, d.model().filter)
	}
	d.keys("/", "backspace", "backspace", "right") // a key with no text types nothing
	if d.model().filter != "" {
		t.Fatal("typed a key without text")
	}
}

func TestSessionAndPlanFilters(t *testing.T) {
	f := newFake(2)
	f.snap.Entries = append(f.snap.Entries, Entry{Key: "op:1", Kind: "undo", Summary: "plan undo", Plan: "other", Time: t0})
	d := start(t, f, Options{Session: "s1"})
	d.lacks("plan undo")
	d = start(t, f, Options{Plan: "other"})
	d.has("plan undo")
	d.lacks("edit number")
}

func TestHelpOverlay(t *testing.T) {
	d := start(t, newFake(2), Options{})
	d.keys("?")
	d.has("rewind to before the entry", "any key closes the help")
	d.keys("j")
	d.lacks("any key closes the help")
	if d.model().cursor != 0 {
		t.Fatal("the key that closed the help also moved")
	}
}

func TestQuitKeys(t *testing.T) {
	for _, k := range []string{"q", "esc", "ctrl+c"} {
		d := start(t, newFake(1), Options{})
		d.keys(k)
		if !d.quit {
			t.Fatalf("%s did not quit", k)
		}
	}
}

func TestPreviewFilesAndDiff(t *testing.T) {
	d := start(t, newFake(3), Options{})
	d.keys("j", "enter")
	d.has("tool call id1", "> M a.txt", "  A b.txt", "  D c.txt", "enter diff")
	d.keys("j", "down", "j")
	if d.model().fcur != 2 {
		t.Fatalf("file cursor %d", d.model().fcur)
	}
	d.keys("g", "G", "home", "space", "pgup", "b", "f", "end", "up", "k", "k")
	if d.model().fcur != 0 {
		t.Fatalf("file cursor %d", d.model().fcur)
	}
	d.keys("enter")
	d.has("a.txt", "+two", "-one", "@@ -1 +1 @@", "    indented  [31mred", "-- lines 1-7 of 7 --")
	d.keys("j", "G", "g", "space", "b", "d", "ctrl+d", "ctrl+u", "pgdown", "pgup", "down", "up", "enter", "home", "end")
	d.keys("esc")
	if d.model().screen != scrFiles {
		t.Fatal("esc did not go back to the files")
	}
	d.keys("left")
	if d.model().screen != scrList || d.model().cursor != 1 {
		t.Fatal("left did not go back to the list, on the same entry")
	}
}

func TestDiffScrollsThousandsOfLines(t *testing.T) {
	f := newFake(1)
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "+line %d\n", i)
	}
	f.patches["a.txt"] = b.String()
	d := start(t, f, Options{})
	d.keys("enter", "enter", "space", "space")
	d.has("+line 38", "-- lines 39-57 of 5000 --")
	d.lacks("+line 57")
	d.keys("G")
	d.has("+line 4999", "of 5000")
	d.keys("q", "h")
	if d.model().screen != scrList {
		t.Fatal("q, h did not go back to the list")
	}
}

func TestPreviewStates(t *testing.T) {
	f := newFake(1)
	f.changes["cp:0"] = []Change{}
	d := start(t, f, Options{})
	d.keys("enter")
	d.has("no files changed from this entry to the next")
	d.keys("enter") // no file to show
	if d.model().screen != scrFiles {
		t.Fatal("enter on no files left the files screen")
	}
	m := New(context.Background(), f, Options{})
	m.screen, m.entry = scrFiles, Entry{Key: "x"}
	if !strings.Contains(m.View().Content, "reading its changes") {
		t.Fatal("no sign of reading the changes")
	}
	m.screen = scrDiff
	if !strings.Contains(m.View().Content, "reading the diff") {
		t.Fatal("no sign of reading the diff")
	}
	// An answer for an entry no longer open is dropped.
	next, _ := m.Update(filesMsg{key: "other", changes: []Change{{"A", "z"}}})
	if next.(Model).files != nil {
		t.Fatal("a stale answer was taken")
	}
}

func TestPatchFails(t *testing.T) {
	f := newFake(1)
	f.patchErr = errors.New("unreadable")
	d := start(t, f, Options{})
	d.keys("enter", "enter")
	d.has("diff: unreadable")
	if d.model().screen != scrFiles {
		t.Fatal("a failed diff did not return to the files")
	}
}

func TestLogEntryHasNoFiles(t *testing.T) {
	f := &fakeSource{snap: Snapshot{Entries: []Entry{{Key: "op:1", Kind: "gc", Summary: "plan gc", Time: t0}}}}
	d := start(t, f, Options{})
	d.keys("enter")
	d.has("a log entry has no files of its own")
	d.keys("r")
	d.has("nothing to rewind to before this entry")
	if len(f.asked) != 0 {
		t.Fatalf("asked %v", f.asked)
	}
}

func TestRewindDeclinedChangesNothing(t *testing.T) {
	f := newFake(3)
	d := start(t, f, Options{})
	d.keys("j", "r")
	d.has("rewind: what it will do", "Rolling back to cp would modify 1 file:", "M a.txt", "go ahead? y yes  n no")
	d.keys("j", "x") // scrolling keys, and others, neither confirm nor decline
	if d.model().screen != scrConfirm {
		t.Fatal("a key other than y/n left the question")
	}
	d.keys("n")
	d.has("rewind declined: nothing changed")
	if fmt.Sprint(f.asked) != "[dry rewind cp1]" {
		t.Fatalf("asked %v", f.asked)
	}
	for _, k := range []string{"N", "q", "esc"} {
		d.keys("r", k)
		if d.model().screen != scrList {
			t.Fatalf("%s did not decline", k)
		}
	}
	for _, a := range f.asked {
		if strings.HasPrefix(a, "do") {
			t.Fatalf("a declined rewind ran: %v", f.asked)
		}
	}
}

func TestRewindConfirmedRuns(t *testing.T) {
	f := newFake(3)
	d := start(t, f, Options{})
	d.keys("G", "enter", "r", "y")
	if fmt.Sprint(f.asked) != "[dry rewind cp0 do rewind cp0]" {
		t.Fatalf("asked %v", f.asked)
	}
	d.has("Rolled back to cp")
	if d.model().screen != scrList {
		t.Fatal("a done action did not return to the list")
	}
}

func TestUndoRedo(t *testing.T) {
	f := newFake(1)
	d := start(t, f, Options{})
	d.keys("u", "Y", "U", "y", "ctrl+r", "n")
	if got := fmt.Sprint(f.asked); got != "[dry undo  do undo  dry redo  do redo  dry redo ]" {
		t.Fatalf("asked %v", got)
	}
}

func TestActionRefusedOrFailed(t *testing.T) {
	f := newFake(1)
	f.dry = Outcome{Text: "nothing to undo\nmore", Failed: true}
	d := start(t, f, Options{})
	d.keys("u")
	d.has("undo refused: nothing to undo")
	d.lacks("more")
	if d.model().screen != scrList {
		t.Fatal("a refused dry run asked anyway")
	}
	f.dry = Outcome{Text: "would undo"}
	f.do = []Outcome{{Text: "integrity: damaged", Failed: true}}
	d.keys("u", "y")
	d.has("undo failed: integrity: damaged")
}

func TestBusyLockRetries(t *testing.T) {
	f := newFake(1)
	f.do = []Outcome{{Text: "the workspace is busy: another plan process holds its lock", Failed: true, Busy: true}, {Text: "Rolled back"}}
	d := start(t, f, Options{})
	d.keys("r", "y")
	d.has("the workspace is busy", "y retries  n gives up")
	if d.model().screen != scrConfirm || !d.model().retry {
		t.Fatal("a busy workspace did not offer a retry")
	}
	d.keys("y")
	d.has("Rolled back")
	if d.model().retry {
		t.Fatal("still retrying after success")
	}
	f.do = []Outcome{{Text: "busy", Failed: true, Busy: true}}
	d.keys("r", "y", "n")
	d.has("rewind declined: nothing changed")
}

// While the dry run or the action runs, keys do not answer the question.
func TestKeysWaitWhileRunning(t *testing.T) {
	f := newFake(1)
	m := New(context.Background(), f, Options{})
	next, _ := m.Update(loadedMsg{snap: f.snap})
	next, cmd := next.Update(press("r"))
	if cmd == nil || !strings.Contains(next.View().Content, "dry run…") {
		t.Fatal("no dry run under way")
	}
	next, cmd = next.Update(press("y"))
	if cmd != nil {
		t.Fatal("y ran the action before its dry run was seen")
	}
	next, _ = next.Update(dryRunMsg{action: Action{Kind: Rewind}, out: f.dry})
	next, _ = next.Update(press("y"))
	if !strings.Contains(next.View().Content, "working…") {
		t.Fatal("no sign of the action running")
	}
}

func TestLiveEntriesAppear(t *testing.T) {
	f := newFake(2)
	d := start(t, f, Options{})
	m := d.model()
	m.opts.Poll = time.Millisecond
	d.m = m
	d.keys("j")
	f.mu.Lock()
	f.snap.Entries = entries(4)
	f.snap.Pending = "an interrupted rollback (op1) is pending: `plan recover` finishes it"
	f.mu.Unlock()
	next, cmd := d.m.Update(tickMsg{})
	batch, ok := cmd().(tea.BatchMsg)
	if !ok || len(batch) != 2 {
		t.Fatalf("a tick did not load and tick again: %T", cmd())
	}
	d.m = next
	d.run(batch[0])
	d.has("edit number 3", "2 new entries")
	if e, _ := d.model().current(); e.Key != "cp:0" {
		t.Fatalf("the cursor left its entry for %s", e.Key)
	}
	d.keys("j") // the message clears; the pending operation is flagged instead
	d.has("! an interrupted rollback (op1) is pending")
	if New(context.Background(), f, Options{}).tick() != nil {
		t.Fatal("polling without a period")
	}
}

func TestLoadFails(t *testing.T) {
	f := newFake(1)
	f.loadErr = errors.New("database locked")
	d := start(t, f, Options{})
	d.has("reading the timeline: database locked")
}

func TestFlaggedEntriesAndControlCharacters(t *testing.T) {
	f := &fakeSource{snap: Snapshot{Entries: []Entry{{Key: "op:1", Kind: "rollback", Summary: "plan rollback\x1b]0;evil\x07", Flag: "undone", Time: t0, Rewind: "x"}}}}
	d := start(t, f, Options{Color: true})
	d.has("[undone] plan roll")
	d.lacks("\x07")
	d.lacks("\x1b]")
	f.snap.Entries[0].Summary = "\x1b[31mred"
	d = start(t, f, Options{})
	d.has("[undone]  [31mred")
	d.lacks("\x1b")
}

func TestTickAndStrayMessages(t *testing.T) {
	m := New(context.Background(), newFake(1), Options{Poll: time.Millisecond})
	if _, ok := m.tick()().(tickMsg); !ok {
		t.Fatal("the poll does not tick")
	}
	next, cmd := m.Update(struct{}{})
	if cmd != nil || next.(Model).screen != scrList {
		t.Fatal("a message the model does not know did something")
	}
	// Before their counts arrive, entries show an ellipsis; a flagged one off the cursor its flag.
	f := newFake(2)
	f.snap.Entries[1].Flag = "pinned"
	next, _ = New(context.Background(), f, Options{Color: true}).Update(loadedMsg{snap: f.snap})
	if v := next.View().Content; !strings.Contains(v, "…") || !strings.Contains(v, "[pinned]") {
		t.Fatalf("no pending counts or flag:\n%s", v)
	}
	next, _ = next.Update(loadedMsg{snap: Snapshot{Entries: entries(3)}})
	if !strings.Contains(next.View().Content, "1 new entry") {
		t.Fatal("one new entry not said so")
	}
}

func TestManyFilesScroll(t *testing.T) {
	f := newFake(1)
	var many []Change
	for i := range 60 {
		many = append(many, Change{"A", fmt.Sprintf("f%02d", i)})
	}
	f.changes["cp:0"] = many
	d := start(t, f, Options{})
	d.keys("enter", "G")
	d.has("> A f59")
	d.lacks("f00")
	d.keys("g")
	d.has("> A f00")
	d.lacks("f59")
}
