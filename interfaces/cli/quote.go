package cli

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text output shows strings plan did not write (file names, agents' commands and prompts, notes,
// labels, reasons, plan and decision names, messages) as a terminal cannot act on them: a control
// character (ESC, BEL, a newline, C1 controls such as CSI), another character that is not
// printable (a bidirectional override, say) or bytes that are not UTF-8 would otherwise clear the
// screen, retitle the terminal, plant a link or forge a line. As git's core.quotePath, such a
// string is shown double-quoted with Go's escapes (strconv.Quote: "name\x1b[2Jx"); every other
// string, non-ASCII letters included, is shown as it is. JSON output is escaped by its encoder and
// always carries the exact string.

// quote is s as text output shows it: unchanged when every character is printable, else quoted.
func quote(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// quoteEach is quote of each of ss.
func quoteEach(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quote(s)
	}
	return out
}

// printable reports whether s is valid UTF-8 of printable characters only (strconv.IsPrint:
// letters, marks, numbers, punctuation, symbols and the ASCII space).
func printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// scrub is a message (an error, a warning) made safe for the terminal without quoting it whole:
// each character quote would escape is replaced by its escape, in place; newlines and tabs, which
// plan's own messages use, are kept. Messages echo what the user or an agent gave (a path, a
// reference, a label) inside plan's words.
func scrub(s string) string {
	if printable(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError && n == 1, !printable(s[i : i+n]):
			q := strconv.Quote(s[i : i+n])
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
