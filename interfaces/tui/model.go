package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Options are how a browser looks and behaves.
type Options struct {
	// Title heads the screen (the workspace root).
	Title string
	// Color paints the screen; off, the view holds no colour codes at all.
	Color bool
	// Poll is how often the timeline is read again for new entries (0: never).
	Poll time.Duration
	// Session and Plan keep only the entries of that agent session or plan.
	Session, Plan string
}

type screen int

const (
	scrList screen = iota
	scrFiles
	scrDiff
	scrConfirm
)

// The messages the model's commands answer with.
type (
	loadedMsg struct {
		snap Snapshot
		err  error
	}
	countsMsg struct {
		counts map[string]Counts
		failed map[string]bool
	}
	filesMsg struct {
		key     string
		changes []Change
		err     error
	}
	patchMsg struct {
		path, text string
		err        error
	}
	dryRunMsg struct {
		action Action
		out    Outcome
	}
	doneMsg struct {
		action Action
		out    Outcome
	}
	tickMsg struct{}
)

// pager is a scrolled view of lines: the diff, a dry run.
type pager struct {
	lines []string
	top   int
}

// Model is the browser's state: a plain value, updated by Update and drawn by View.
type Model struct {
	ctx  context.Context
	src  Source
	opts Options
	st   styles

	width, height int

	all     []Entry
	shown   []int // indices into all that pass the filters
	cursor  int   // into shown
	top     int
	loaded  bool
	pending string
	counts  map[string]Counts
	asked   map[string]bool
	failed  map[string]bool

	filter string
	typing bool // the search line takes the keys
	help   bool

	screen screen
	entry  Entry // the entry the files and diff screens show
	files  []Change
	fcur   int
	ftop   int
	diff   pager
	title  string

	action  Action
	dry     pager
	from    screen // the screen a confirmation returns to
	running bool
	retry   bool // the last attempt was refused by the lock

	msg string
}

// New is a browser of src; ctx bounds everything it reads and does.
func New(ctx context.Context, src Source, opts Options) Model {
	return Model{ctx: ctx, src: src, opts: opts, st: newStyles(opts.Color), width: 80, height: 24,
		counts: map[string]Counts{}, asked: map[string]bool{}, failed: map[string]bool{}}
}

// Init loads the timeline and starts polling.
func (m Model) Init() tea.Cmd { return tea.Batch(m.load(), m.tick()) }

func (m Model) load() tea.Cmd {
	return func() tea.Msg {
		snap, err := m.src.Load(m.ctx)
		return loadedMsg{snap: snap, err: err}
	}
}

func (m Model) tick() tea.Cmd {
	if m.opts.Poll <= 0 {
		return nil
	}
	return tea.Tick(m.opts.Poll, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update applies one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 6)
		m.clamp()
		return m, m.askCounts()
	case tickMsg:
		return m, tea.Batch(m.load(), m.tick())
	case loadedMsg:
		return m.loaded2(msg)
	case countsMsg:
		for k, c := range msg.counts {
			m.counts[k] = c
		}
		for k := range msg.failed {
			m.failed[k] = true
		}
		return m, nil
	case filesMsg:
		if msg.key != m.entry.Key {
			return m, nil
		}
		if msg.err != nil {
			m.msg = "changes: " + msg.err.Error()
			m.screen = scrList
			return m, nil
		}
		m.files, m.fcur, m.ftop = msg.changes, 0, 0
		return m, nil
	case patchMsg:
		if msg.err != nil {
			m.msg = "diff: " + msg.err.Error()
			m.screen = scrFiles
			return m, nil
		}
		m.diff = pager{lines: strings.Split(oneLines(strings.TrimSuffix(msg.text, "\n")), "\n")}
		return m, nil
	case dryRunMsg:
		m.running = false
		if msg.out.Failed {
			m.screen = m.from
			m.msg = string(msg.action.Kind) + " refused: " + firstLine(msg.out.Text)
			return m, nil
		}
		m.dry = pager{lines: strings.Split(ansi.Hardwrap(oneLines(strings.TrimRight(msg.out.Text, "\n")), m.width, true), "\n")}
		return m, nil
	case doneMsg:
		return m.done(msg)
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// loaded2 takes a new snapshot, keeping the cursor on the entry it was on.
func (m Model) loaded2(msg loadedMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		m.msg = "reading the timeline: " + msg.err.Error()
		return m, nil
	}
	key := ""
	if e, ok := m.current(); ok {
		key = e.Key
	}
	fresh := m.loaded && len(msg.snap.Entries) > len(m.all)
	added := len(msg.snap.Entries) - len(m.all)
	m.all, m.pending, m.loaded = msg.snap.Entries, msg.snap.Pending, true
	if fresh {
		// Entries' changes are to the next entry: a new entry changes its predecessor's.
		m.counts, m.asked, m.failed = map[string]Counts{}, map[string]bool{}, map[string]bool{}
		m.msg = fmt.Sprintf("%d new %s", added, plural(added, "entry", "entries"))
	}
	m.refilter(key)
	return m, m.askCounts()
}

// done reports an action's outcome and reads the timeline again.
func (m Model) done(msg doneMsg) (tea.Model, tea.Cmd) {
	m.running = false
	if msg.out.Busy {
		m.retry = true
		m.msg = firstLine(msg.out.Text)
		return m, nil
	}
	m.retry = false
	m.screen = scrList
	if msg.out.Failed {
		m.msg = string(msg.action.Kind) + " failed: " + firstLine(msg.out.Text)
	} else {
		m.msg = firstLine(msg.out.Text)
	}
	m.counts, m.asked, m.failed = map[string]Counts{}, map[string]bool{}, map[string]bool{}
	return m, m.load()
}

// refilter recomputes the shown entries, putting the cursor on key when it is still shown.
func (m *Model) refilter(key string) {
	m.shown = m.shown[:0]
	needle := strings.ToLower(m.filter)
	for i, e := range m.all {
		if m.opts.Session != "" && e.Session != m.opts.Session || m.opts.Plan != "" && e.Plan != m.opts.Plan {
			continue
		}
		if needle != "" && !strings.Contains(strings.ToLower(e.Kind+" "+e.Who+" "+e.Summary+" "+e.ID+" "+e.Flag), needle) {
			continue
		}
		m.shown = append(m.shown, i)
	}
	m.cursor = 0
	for i, idx := range m.shown {
		if m.all[idx].Key == key {
			m.cursor = i
		}
	}
	m.clamp()
}

func (m Model) current() (Entry, bool) {
	if m.cursor < 0 || m.cursor >= len(m.shown) {
		return Entry{}, false
	}
	return m.all[m.shown[m.cursor]], true
}

// listRows is how many entries the list screen shows.
func (m Model) listRows() int { return max(m.height-4, 1) }

// bodyRows is how many lines the files, diff and confirmation screens scroll through.
func (m Model) bodyRows() int { return max(m.height-4, 1) }

func (m *Model) clamp() {
	m.cursor = clampInt(m.cursor, 0, len(m.shown)-1)
	rows := m.listRows()
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+rows {
		m.top = m.cursor - rows + 1
	}
	m.top = clampInt(m.top, 0, max(len(m.shown)-rows, 0))
}

// askCounts asks for the counts of the entries on screen that have none yet: a page at a time,
// however long the history.
func (m Model) askCounts() tea.Cmd {
	var want []Entry
	for i := m.top; i < min(m.top+m.listRows(), len(m.shown)); i++ {
		e := m.all[m.shown[i]]
		if e.HasChanges && !m.asked[e.Key] {
			m.asked[e.Key] = true // a map: shared with the model Update returns
			want = append(want, e)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return func() tea.Msg {
		msg := countsMsg{counts: map[string]Counts{}, failed: map[string]bool{}}
		for _, e := range want {
			c, err := m.src.Counts(m.ctx, e)
			if err != nil {
				msg.failed[e.Key] = true
				continue
			}
			msg.counts[e.Key] = c
		}
		return msg
	}
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if s == "ctrl+c" {
		return m, tea.Quit
	}
	if m.help {
		m.help = false // any key closes the help
		return m, nil
	}
	if m.typing {
		return m.searchKey(k)
	}
	if s == "?" {
		m.help = true
		return m, nil
	}
	m.msg = ""
	switch m.screen {
	case scrFiles:
		return m.filesKey(s)
	case scrDiff:
		return m.diffKey(s)
	case scrConfirm:
		return m.confirmKey(s)
	}
	return m.listKey(s)
}

func (m Model) searchKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := ""
	if e, ok := m.current(); ok {
		key = e.Key
	}
	switch s := k.String(); s {
	case "enter":
		m.typing = false
		return m, m.askCounts()
	case "esc":
		m.typing, m.filter = false, ""
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	default:
		if k.Text == "" {
			return m, nil
		}
		m.filter += k.Text
	}
	m.refilter(key)
	return m, m.askCounts()
}

func (m Model) listKey(s string) (tea.Model, tea.Cmd) {
	switch s {
	case "q":
		return m, tea.Quit
	case "esc":
		if m.filter == "" {
			return m, tea.Quit
		}
		key := ""
		if e, ok := m.current(); ok {
			key = e.Key
		}
		m.filter = ""
		m.refilter(key)
	case "/":
		m.typing = true
		return m, nil
	case "j", "down":
		m.cursor++
	case "k", "up":
		m.cursor--
	case "space", "pgdown", "ctrl+f", "f":
		m.cursor += m.listRows()
		m.top += m.listRows()
	case "b", "pgup", "ctrl+b":
		m.cursor -= m.listRows()
		m.top -= m.listRows()
	case "g", "home":
		m.cursor = 0
	case "G", "end":
		m.cursor = len(m.shown) - 1
	case "enter", "l", "right":
		return m.open()
	case "r":
		return m.ask(Action{Kind: Rewind})
	case "u":
		return m.ask(Action{Kind: Undo})
	case "U", "ctrl+r":
		return m.ask(Action{Kind: Redo})
	}
	m.clamp()
	return m, m.askCounts()
}

// open shows the current entry's changed files.
func (m Model) open() (tea.Model, tea.Cmd) {
	e, ok := m.current()
	if !ok {
		return m, nil
	}
	if !e.HasChanges {
		m.msg = "a log entry has no files of its own: r rewinds to before it"
		return m, nil
	}
	m.entry, m.files, m.screen = e, nil, scrFiles
	return m, func() tea.Msg {
		ch, err := m.src.Changes(m.ctx, e)
		return filesMsg{key: e.Key, changes: ch, err: err}
	}
}

func (m Model) filesKey(s string) (tea.Model, tea.Cmd) {
	rows := m.bodyRows() - 1
	switch s {
	case "q", "esc", "h", "left":
		m.screen = scrList
		return m, m.askCounts()
	case "j", "down":
		m.fcur++
	case "k", "up":
		m.fcur--
	case "space", "pgdown", "f":
		m.fcur += rows
	case "b", "pgup":
		m.fcur -= rows
	case "g", "home":
		m.fcur = 0
	case "G", "end":
		m.fcur = len(m.files) - 1
	case "r":
		return m.ask(Action{Kind: Rewind})
	case "enter", "l", "right":
		if len(m.files) == 0 {
			return m, nil
		}
		f := m.files[m.fcur]
		m.screen, m.diff, m.title = scrDiff, pager{}, f.Path
		e := m.entry
		return m, func() tea.Msg {
			text, err := m.src.Patch(m.ctx, e, f.Path)
			return patchMsg{path: f.Path, text: text, err: err}
		}
	}
	m.fcur = clampInt(m.fcur, 0, len(m.files)-1)
	if m.fcur < m.ftop {
		m.ftop = m.fcur
	}
	if m.fcur >= m.ftop+rows {
		m.ftop = m.fcur - rows + 1
	}
	return m, nil
}

func (m Model) diffKey(s string) (tea.Model, tea.Cmd) {
	if s == "q" || s == "esc" || s == "h" || s == "left" {
		m.screen = scrFiles
		return m, nil
	}
	m.diff.scroll(s, m.bodyRows()-1)
	return m, nil
}

// scroll moves p by the key s, as less does.
func (p *pager) scroll(s string, rows int) {
	switch s {
	case "j", "down", "enter":
		p.top++
	case "k", "up":
		p.top--
	case "space", "pgdown", "f", "ctrl+f":
		p.top += rows
	case "b", "pgup", "ctrl+b":
		p.top -= rows
	case "d", "ctrl+d":
		p.top += rows / 2
	case "ctrl+u":
		p.top -= rows / 2
	case "g", "home":
		p.top = 0
	case "G", "end":
		p.top = len(p.lines)
	}
	p.top = clampInt(p.top, 0, max(len(p.lines)-rows, 0))
}

// ask starts an action: its dry run first, then the question.
func (m Model) ask(a Action) (tea.Model, tea.Cmd) {
	if a.Kind == Rewind {
		e, ok := m.current()
		if m.screen == scrFiles {
			e, ok = m.entry, true
		}
		if !ok {
			return m, nil
		}
		if e.Rewind == "" {
			m.msg = "nothing to rewind to before this entry (it kept no checkpoint)"
			return m, nil
		}
		a.Entry = e
	}
	m.action, m.from, m.screen, m.dry, m.running, m.retry = a, m.screen, scrConfirm, pager{}, true, false
	return m, func() tea.Msg { return dryRunMsg{action: a, out: m.src.DryRun(m.ctx, a)} }
}

func (m Model) confirmKey(s string) (tea.Model, tea.Cmd) {
	if m.running {
		return m, nil // the dry run or the action is under way
	}
	switch s {
	case "y", "Y":
		m.running = true
		a := m.action
		return m, func() tea.Msg { return doneMsg{action: a, out: m.src.Do(m.ctx, a)} }
	case "n", "N", "q", "esc":
		m.screen, m.retry = m.from, false
		m.msg = string(m.action.Kind) + " declined: nothing changed"
		return m, m.askCounts()
	}
	m.dry.scroll(s, m.bodyRows()-1)
	return m, nil
}

func clampInt(v, lo, hi int) int {
	if hi < lo {
		return lo
	}
	return min(max(v, lo), hi)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// oneLines is s with the control characters of each line made spaces (tabs four), lines kept.
func oneLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = oneLine(strings.ReplaceAll(l, "\t", "    "))
	}
	return strings.Join(lines, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
