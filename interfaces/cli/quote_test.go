package cli

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"plain.txt":          "plain.txt",
		"café/日本語 é.txt":     "café/日本語 é.txt",
		`a "b" \c`:           `a "b" \c`, // nothing a terminal acts on: as it is
		"name\x1b[2Jx":       `"name\x1b[2Jx"`,
		"bell\a":             `"bell\a"`,
		"new\nline":          `"new\nline"`,
		"tab\there":          `"tab\there"`,
		"del\x7f":            `"del\x7f"`,
		"csi\u009b2J":        `"csi\u009b2J"`,      // a C1 control, CSI to some terminals
		"rlo\u202etxt.exe":   `"rlo\u202etxt.exe"`, // a bidirectional override
		"bad\xffutf8":        `"bad\xffutf8"`,
		"esc\x1b \"quoted\"": `"esc\x1b \"quoted\""`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := quoteEach([]string{"a", "b\x1b"}); strings.Join(got, ",") != `a,"b\x1b"` {
		t.Errorf("quoteEach = %q", got)
	}
}

func TestScrub(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"workspace /tmp/x is busy":          "workspace /tmp/x is busy",
		"two\nlines\twith a tab":            "two\nlines\twith a tab",
		"path /tmp/a\x1b[2Jb: not found":    `path /tmp/a\x1b[2Jb: not found`,
		"bell\a and café\n":                 "bell\\a and café\n",
		"bad \xff byte, C1 \u009b, \u202e.": `bad \xff byte, C1 \u009b, \u202e.`,
		"cr\rover":                          `cr\rover`,
	} {
		if got := scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}
