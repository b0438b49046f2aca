package cli

import (
	"os"
	"strconv"

	"golang.org/x/term"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) } // #nosec -- fd fits in int

// columns is the width text output is laid out for, as git finds it: $COLUMNS when it is a
// positive number, else the terminal's width when stdout is one, else 80.
func (h *handler) columns() int {
	if n, err := strconv.Atoi(h.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := h.r.Stdout.(*os.File); ok && h.r.OutputTerminal {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 { // #nosec G115 -- fd fits in int
			return w
		}
	}
	return 80
}
