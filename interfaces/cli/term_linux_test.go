package cli

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// On a terminal, text is laid out for its width; $COLUMNS wins, as for git.
func TestColumnsOfTheTerminal(t *testing.T) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer func() { _ = master.Close() }()
	fd := int(master.Fd()) // #nosec G115 -- a file descriptor fits in int
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slave.Close() }()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 132, Row: 40}); err != nil { // #nosec G115
		t.Fatal(err)
	}
	columns := ""
	h := &handler{r: &Runner{Stdout: slave, OutputTerminal: true, Getenv: func(k string) string {
		if k == "COLUMNS" {
			return columns
		}
		return ""
	}}}
	if got := h.columns(); got != 132 {
		t.Errorf("on a 132-column terminal: %d", got)
	}
	columns = "90"
	if got := h.columns(); got != 90 {
		t.Errorf("with COLUMNS=90: %d", got)
	}
	columns = ""
	h.r.OutputTerminal = false
	if got := h.columns(); got != 80 {
		t.Errorf("not a terminal: %d", got)
	}
}
