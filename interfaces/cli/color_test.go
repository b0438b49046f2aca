package cli

import (
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Text is painted with --color=always, or on a terminal with --color=auto unless NO_COLOR is set
// or the terminal is dumb; never with --color=never or --json.
func TestColorModes(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	mustPlan(t, dir, "checkpoint", "create")
	writeFile(t, dir, "a.txt", "two\n")
	const esc = "\x1b["
	for _, c := range []struct {
		name    string
		r       Runner
		args    []string
		painted bool
	}{
		{"always", Runner{}, []string{"--color=always"}, true},
		{"never on a terminal", Runner{OutputTerminal: true}, []string{"--color=never"}, false},
		{"auto on a terminal", Runner{OutputTerminal: true}, nil, true},
		{"auto off a terminal", Runner{}, nil, false},
		{"NO_COLOR", Runner{OutputTerminal: true, Getenv: envOf(map[string]string{"NO_COLOR": "1"})}, nil, false},
		{"dumb terminal", Runner{OutputTerminal: true, Getenv: envOf(map[string]string{"TERM": "dumb"})}, nil, false},
		{"always wins over NO_COLOR", Runner{Getenv: envOf(map[string]string{"NO_COLOR": "1"})}, []string{"--color", "always"}, true},
		{"JSON", Runner{}, []string{"--color=always", "--json"}, false},
	} {
		r := c.r
		if r.Getenv == nil {
			r.Getenv = envOf(map[string]string{"PLAN_PAGER": "cat"})
		}
		o := invoke(r, append(append([]string{"-C", dir}, c.args...), "diff", "@", "--patch", "--stat")...)
		if o.code != ExitOK || strings.Contains(o.stdout, esc) != c.painted {
			t.Errorf("%s: painted %v, want %v\n%v", c.name, strings.Contains(o.stdout, esc), c.painted, o)
		}
	}
	if o := inWorkspace(dir, "--color=sometimes", "status"); o.code != ExitUsage || !strings.Contains(o.stderr, "auto, always or never") {
		t.Errorf("--color=sometimes: %v", o)
	}
	o := inWorkspace(dir, "--color=always", "history", "--limit", "1")
	if !strings.Contains(o.stdout, "\x1b[32mok") {
		t.Errorf("history's outcome is not painted: %q", o.stdout)
	}
	o = inWorkspace(dir, "--color=always", "checkpoint", "list")
	if lines := strings.Split(o.stdout, "\n"); len(lines) < 2 || strings.Contains(lines[0], esc) || !strings.HasPrefix(lines[1], "\x1b[1;35m") {
		t.Errorf("checkpoint list: the header must stay plain and each short name be painted: %q", o.stdout)
	}
}

func TestPalette(t *testing.T) {
	p := palette{on: true}
	for c, sgr := range map[tree.ChangeType]string{tree.Added: sgrGreen, tree.Deleted: sgrRed, tree.Modified: sgrYellow, tree.TypeChanged: sgrYellow} {
		if got, want := p.letter(c), "\x1b["+sgr+"m"+c.Letter()+"\x1b[0m"; got != want {
			t.Errorf("%s: %q, want %q", c, got, want)
		}
	}
	patch := "diff --git a/x b/x\nold mode 100644\nnew mode 100755\nindex 1..2\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-one\n+two\n context\n"
	got := p.patch(patch)
	for _, want := range []string{"\x1b[1mdiff --git a/x b/x\x1b[0m\n", "\x1b[1mold mode 100644\x1b[0m\n", "\x1b[1m--- a/x\x1b[0m\n",
		"\x1b[36m@@ -1 +1 @@\x1b[0m\n", "\x1b[31m-one\x1b[0m\n", "\x1b[32m+two\x1b[0m\n", "\n context\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("patch lacks %q:\n%q", want, got)
		}
	}
	if (palette{}).patch(patch) != patch || (palette{}).shortName("kopq", nil) != "kopq" || p.paint(sgrRed, "") != "" {
		t.Error("an unpainted palette changed the text")
	}
	all := map[string]bool{"kopq": true, "kozz": true, "mnop": true, "kopr": true}
	for name, n := range map[string]int{"mnop": 1, "kozz": 3, "kopq": 4, "kopr": 4} {
		if got := uniquePrefix(name, all); got != n {
			t.Errorf("uniquePrefix(%s) = %d, want %d", name, got, n)
		}
	}
}

// Long text on a terminal goes through the pager the user chose (PLAN_PAGER, then PAGER, less
// by default, with LESS=FRX unless LESS is set); not with --no-pager, PAGER=cat, JSON, a command
// whose output is short, or off a terminal.
func TestPager(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	mustPlan(t, dir, "checkpoint", "create")
	paged := func(env map[string]string, args ...string) outcome {
		return invoke(Runner{OutputTerminal: true, Getenv: envOf(env)}, append([]string{"-C", dir, "--color=never"}, args...)...)
	}
	if o := paged(map[string]string{"PLAN_PAGER": "tr a-z A-Z", "PAGER": "false"}, "history"); o.code != ExitOK || !strings.Contains(o.stdout, "CHECKPOINT CREATE") {
		t.Errorf("PLAN_PAGER: %v", o)
	}
	if o := paged(map[string]string{"PAGER": "sed s/^/paged:/"}, "checkpoint", "list"); !strings.HasPrefix(o.stdout, "paged:SHORT") {
		t.Errorf("PAGER: %v", o)
	}
	if o := paged(map[string]string{"PAGER": `echo "LESS=$LESS"; cat >/dev/null`}, "history"); o.stdout != "LESS=FRX\n" {
		t.Errorf("LESS for the pager: %v", o)
	}
	for name, o := range map[string]outcome{
		"--no-pager":      paged(map[string]string{"PAGER": "tr a-z A-Z"}, "--no-pager", "history"),
		"PAGER=cat":       paged(map[string]string{"PAGER": "cat"}, "history"),
		"JSON":            paged(map[string]string{"PAGER": "tr a-z A-Z"}, "--json", "history"),
		"a short command": paged(map[string]string{"PAGER": "tr a-z A-Z"}, "status"),
		"off a terminal":  invoke(Runner{Getenv: envOf(map[string]string{"PAGER": "tr a-z A-Z"})}, "-C", dir, "history"),
	} {
		if o.code != ExitOK || strings.Contains(o.stdout, "CHECKPOINT CREATE") || strings.Contains(o.stdout, "WORKSPACE") {
			t.Errorf("%s went through the pager: %v", name, o)
		}
	}
	// A pager the user quits before the end (it reads nothing) is not a failure of the command.
	if o := paged(map[string]string{"PAGER": "true"}, "history"); o.code != ExitOK || o.stderr != "" {
		t.Errorf("a pager that quit at once: %v", o)
	}
}
