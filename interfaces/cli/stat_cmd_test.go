package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --stat is laid out as git lays it out: counts right-aligned, bars scaled so the largest change
// fits the width ($COLUMNS, else 80), long names cut at their start, files as the unit, a mode
// change named after the totals, and nothing at all when nothing changed.
func TestDiffStatLayout(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "big.txt", strings.Repeat("line\n", 300))
	writeFile(t, dir, "small.txt", "a\n")
	writeFile(t, dir, "run.sh", "echo\n")
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "big.txt", strings.Repeat("line\n", 100)+strings.Repeat("new\n", 20))
	writeFile(t, dir, "small.txt", "a\nb\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	stat := func(columns string, args ...string) outcome {
		t.Helper()
		r := Runner{Getenv: func(k string) string {
			if k == "COLUMNS" {
				return columns
			}
			return os.Getenv(k)
		}}
		o := invoke(r, append([]string{"-C", dir, "diff", "--stat"}, args...)...)
		if o.code != ExitOK {
			t.Fatalf("%v", o)
		}
		return o
	}
	// 80 columns: the graph gets 80*3/8-3-6 = 21 columns; 220 lines changed fill them.
	got := stat("", first).stdout
	want := " big.txt   | 220 ++-------------------\n" +
		" run.sh    |   0\n" +
		" small.txt |   1 +\n" +
		" 3 files changed, 21 insertions(+), 200 deletions(-)\n" +
		" mode change 100600 => 100755 run.sh\n"
	if got != want {
		t.Errorf("80 columns:\n got %q\nwant %q", got, want)
	}
	// A wide terminal: no scaling, one mark a line.
	if got := stat("400", first).stdout; !strings.Contains(got, " big.txt   | 220 "+strings.Repeat("+", 20)+strings.Repeat("-", 200)+"\n") {
		t.Errorf("400 columns: %q", got)
	}
	// Narrow: a long name is cut at its start, the graph keeps its 6 columns.
	long := "a-very-long-directory-name/with-a-long-file-name.txt"
	writeFile(t, dir, long, "x\n")
	got = stat("30", first, "--", long, "big.txt").stdout
	if !strings.Contains(got, " ...ile-name.txt |   1 +\n") {
		t.Errorf("30 columns: %q", got)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if strings.Contains(line, "|") && len(line) > 30 {
			t.Errorf("a line wider than 30 columns: %q", line)
		}
	}
	// Nothing changed: nothing printed.
	second := createCheckpoint(t, dir)
	if o := stat("", second); o.stdout != "" {
		t.Errorf("an empty diff printed %q", o.stdout)
	}
	if o := stat("x", second, "--", "big.txt"); o.stdout != "" { // a COLUMNS that is no number is ignored
		t.Errorf("an empty diff printed %q", o.stdout)
	}
}

func TestScaleBars(t *testing.T) {
	for _, c := range []struct{ add, del, width, maxChange, wantAdd, wantDel int }{
		{3, 2, 10, 5, 3, 2},       // fits: unscaled
		{100, 0, 10, 100, 10, 0},  // the largest fills the graph
		{1, 1, 10, 1000, 1, 1},    // both sides keep a mark
		{10, 990, 10, 1000, 1, 9}, // fewer insertions than deletions
		{0, 0, 10, 1000, 0, 0},
	} {
		if a, d := scaleBars(c.add, c.del, c.width, c.maxChange); a != c.wantAdd || d != c.wantDel {
			t.Errorf("scaleBars(%d, %d, %d, %d) = %d, %d; want %d, %d", c.add, c.del, c.width, c.maxChange, a, d, c.wantAdd, c.wantDel)
		}
	}
}
