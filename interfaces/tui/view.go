package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// styles paint the screen; with colour off every one is the empty style, which adds nothing.
type styles struct {
	on                                  bool
	head, dim, sel, add, mod, del, flag lipgloss.Style
	hunk, bold, warn                    lipgloss.Style
}

func newStyles(on bool) styles {
	s := styles{on: on}
	if !on {
		return s
	}
	s.head = lipgloss.NewStyle().Bold(true).Reverse(true)
	s.dim = lipgloss.NewStyle().Faint(true)
	s.sel = lipgloss.NewStyle().Reverse(true)
	s.add = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	s.mod = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	s.del = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	s.flag = lipgloss.NewStyle().Foreground(lipgloss.Color("5")).Bold(true)
	s.hunk = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
	s.bold = lipgloss.NewStyle().Bold(true)
	s.warn = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	return s
}

func (s styles) paint(st lipgloss.Style, text string) string {
	if !s.on || text == "" {
		return text
	}
	return st.Render(text)
}

// View draws the screen: a header line, the body, a message line and the keys.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

func (m Model) render() string {
	var body []string
	var keys string
	head := "plan browse  " + m.opts.Title
	switch {
	case m.help:
		body, keys = helpLines, "any key closes the help"
	case m.screen == scrFiles:
		head = fmt.Sprintf("%s %s  %s", m.entry.Kind, m.entry.ID, m.entry.Time.Local().Format("2006-01-02 15:04:05"))
		body, keys = m.filesBody(), "enter diff  r rewind to before  esc back  ? help"
	case m.screen == scrDiff:
		head = m.title
		body, keys = m.diffBody(), "j/k space/b g/G scroll  esc back  ? help"
	case m.screen == scrConfirm:
		head = string(m.action.Kind) + ": what it will do"
		body = m.pageBody(m.dry, m.bodyRows(), m.dryLine)
		switch {
		case m.running && len(m.dry.lines) == 0:
			keys = "dry run…"
		case m.running:
			keys = "working…"
		case m.retry:
			keys = "refused: the workspace is busy; y retries  n gives up"
		default:
			keys = "go ahead? y yes  n no (nothing changes)"
		}
	default:
		body = m.listBody()
		keys = "enter files  r rewind  u undo  U redo  / search  ? help  q quit"
	}
	rows := m.height - 3
	lines := make([]string, 0, m.height)
	lines = append(lines, m.st.paint(m.st.head, pad(cut(head, m.width), m.width)))
	for i := 0; i < rows; i++ {
		if i < len(body) {
			lines = append(lines, body[i])
		} else {
			lines = append(lines, "")
		}
	}
	status := m.msg
	if m.typing {
		status = "/" + m.filter
	} else if m.pending != "" && status == "" {
		status = m.st.paint(m.st.warn, cut("! "+m.pending, m.width))
	}
	lines = append(lines, cut(status, m.width), m.st.paint(m.st.dim, cut(keys, m.width)))
	return strings.Join(lines, "\n")
}

func (m Model) listBody() []string {
	if !m.loaded {
		return []string{"reading the timeline…"}
	}
	out := []string{m.st.paint(m.st.bold, cut(fmt.Sprintf("  %-14s  %-11s  %-16s %-11s  %s", "TIME", "WHAT", "WHO", "FILES", "SUMMARY"), m.width))}
	if len(m.shown) == 0 {
		if m.filter != "" {
			return append(out, "no entry matches /"+m.filter+" (esc clears it)")
		}
		return append(out, "no checkpoints or logged operations yet")
	}
	for i := m.top; i < min(m.top+m.listRows(), len(m.shown)); i++ {
		out = append(out, m.row(m.all[m.shown[i]], i == m.cursor))
	}
	return out
}

// row is one entry's line: time (local), what, who, +/~/- counts, summary, flag.
func (m Model) row(e Entry, selected bool) string {
	files := ""
	switch c, ok := m.counts[e.Key]; {
	case !e.HasChanges:
	case m.failed[e.Key]:
		files = "?"
	case ok:
		files = fmt.Sprintf("+%d ~%d -%d", c.Added, c.Modified, c.Deleted)
	default:
		files = "…"
	}
	summary := e.Summary
	if e.Flag != "" {
		summary = "[" + e.Flag + "] " + summary
	}
	mark := "  "
	if selected {
		mark = "> "
	}
	line := cut(fmt.Sprintf("%s%-14s  %-11s  %-16s %-11s  %s", mark, e.Time.Local().Format("01-02 15:04:05"),
		cut(e.Kind, 11), cut(e.Who, 16), files, oneLine(summary)), m.width)
	if selected {
		return m.st.paint(m.st.sel, pad(line, m.width))
	}
	if e.Flag != "" {
		return m.st.paint(m.st.flag, line)
	}
	return line
}

func (m Model) filesBody() []string {
	out := []string{cut(oneLine(m.entry.Who+"  "+m.entry.Summary), m.width)}
	if m.files == nil {
		return append(out, "reading its changes…")
	}
	if len(m.files) == 0 {
		return append(out, "no files changed from this entry to the next")
	}
	for i := m.ftop; i < min(m.ftop+m.bodyRows()-1, len(m.files)); i++ {
		f := m.files[i]
		mark := "  "
		if i == m.fcur {
			mark = "> "
		}
		line := cut(mark+m.letter(f.Letter)+" "+f.Path, m.width)
		if i == m.fcur && m.st.on {
			line = m.st.paint(m.st.sel, pad(cut(mark+f.Letter+" "+f.Path, m.width), m.width))
		}
		out = append(out, line)
	}
	return out
}

func (m Model) letter(l string) string {
	switch l {
	case "A":
		return m.st.paint(m.st.add, l)
	case "D":
		return m.st.paint(m.st.del, l)
	}
	return m.st.paint(m.st.mod, l)
}

func (m Model) diffBody() []string {
	if m.diff.lines == nil {
		return []string{"reading the diff…"}
	}
	return m.pageBody(m.diff, m.bodyRows(), m.diffLine)
}

// pageBody is p's lines on screen, then where in it the screen stands.
func (m Model) pageBody(p pager, rows int, paint func(string) string) []string {
	var out []string
	// One line of the rows says where the screen stands: rows-1 of p's lines show (scroll's rows).
	for i := p.top; i < min(p.top+rows-1, len(p.lines)); i++ {
		out = append(out, paint(cut(p.lines[i], m.width)))
	}
	if n := len(p.lines); n > 0 {
		out = append(out, m.st.paint(m.st.dim, fmt.Sprintf("-- lines %d-%d of %d --", p.top+1, min(p.top+rows-1, n), n)))
	}
	return out
}

func (m Model) diffLine(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
		return m.st.paint(m.st.bold, l)
	case strings.HasPrefix(l, "@@"):
		return m.st.paint(m.st.hunk, l)
	case strings.HasPrefix(l, "+"):
		return m.st.paint(m.st.add, l)
	case strings.HasPrefix(l, "-"):
		return m.st.paint(m.st.del, l)
	}
	return l
}

func (m Model) dryLine(l string) string { return l }

var helpLines = []string{
	"Timeline (newest first)",
	"  j/k, arrows     move          space/b, PgDn/PgUp   page",
	"  g/G, Home/End   first/last    enter               the entry's files",
	"  /               search        esc                 clear the search, or quit",
	"  r               rewind to before the entry (its dry run first, then y/n)",
	"  u / U           undo / redo the latest operation (dry run first, then y/n)",
	"  q               quit          ?                   this help",
	"Files: enter shows a file's diff, r rewinds, esc goes back",
	"Diff: j/k, space/b, d/ctrl+u, g/G scroll; esc goes back",
	"Every action runs the plain command (plan rollback, undo, redo):",
	"it is logged in plan history and plan undo takes it back.",
}

// cut fits s in width cells, marking a cut with an ellipsis.
func cut(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

func pad(s string, width int) string {
	if n := ansi.StringWidth(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// oneLine keeps a summary on its line, and a terminal's control characters out of it.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
