package cli

import (
	"strings"

	"github.com/planhq/plan/domain/tree"
)

// palette paints text output with ANSI colours when colour is on: --color=always, or --color=auto
// (the default) on a terminal that is not "dumb", without NO_COLOR set (https://no-color.org).
// JSON is never painted.
type palette struct{ on bool }

const (
	sgrBold    = "1"
	sgrDim     = "2"
	sgrRed     = "31"
	sgrGreen   = "32"
	sgrYellow  = "33"
	sgrMagenta = "35"
	sgrCyan    = "36"
)

func (p palette) paint(sgr, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// colorMode decides whether a run paints its text, from --color and the environment.
func colorMode(mode string, terminal bool, getenv func(string) string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return terminal && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb", nil
	}
	return false, usagef("--color %q: auto, always or never", mode)
}

// letter is a change's letter (A, M, D, T) in its colour: added green, deleted red, the rest yellow.
func (p palette) letter(c tree.ChangeType) string {
	switch c {
	case tree.Added:
		return p.paint(sgrGreen, c.Letter())
	case tree.Deleted:
		return p.paint(sgrRed, c.Letter())
	}
	return p.paint(sgrYellow, c.Letter())
}

// patch paints a git-shaped patch: headers bold, hunk lines cyan, added lines green, removed red.
func (p palette) patch(s string) string {
	if !p.on || s == "" {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		nl := l[len(body):]
		switch {
		case strings.HasPrefix(body, "diff --git "), strings.HasPrefix(body, "+++ "), strings.HasPrefix(body, "--- "),
			strings.HasPrefix(body, "index "), strings.HasPrefix(body, "new file mode"), strings.HasPrefix(body, "deleted file mode"),
			strings.HasPrefix(body, "old mode"), strings.HasPrefix(body, "new mode"):
			lines[i] = p.paint(sgrBold, body) + nl
		case strings.HasPrefix(body, "@@"):
			lines[i] = p.paint(sgrCyan, body) + nl
		case strings.HasPrefix(body, "+"):
			lines[i] = p.paint(sgrGreen, body) + nl
		case strings.HasPrefix(body, "-"):
			lines[i] = p.paint(sgrRed, body) + nl
		}
	}
	return strings.Join(lines, "")
}

// shortName paints a checkpoint's short name as jj paints change IDs: the shortest prefix that
// names it among all the workspace's short names bold magenta, the rest dim.
func (p palette) shortName(name string, all map[string]bool) string {
	if !p.on || name == "" {
		return name
	}
	n := uniquePrefix(name, all)
	return p.paint(sgrBold+";"+sgrMagenta, name[:n]) + p.paint(sgrDim, name[n:])
}

// uniquePrefix is the length of the shortest prefix of name no other of all starts with.
func uniquePrefix(name string, all map[string]bool) int {
	for n := 1; n < len(name); n++ {
		unique := true
		for other := range all {
			if other != name && strings.HasPrefix(other, name[:n]) {
				unique = false
				break
			}
		}
		if unique {
			return n
		}
	}
	return len(name)
}

// outcome paints a history outcome: ok green, anything else red.
func (p palette) outcome(s string) string {
	if strings.TrimSpace(s) == "ok" {
		return p.paint(sgrGreen, s)
	}
	return p.paint(sgrRed, s)
}
