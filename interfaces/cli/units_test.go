package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

func TestReorder(t *testing.T) {
	app := (&handler{r: &Runner{}}).app()
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"no arguments beyond the program", "plan", "plan"},
		{"nothing to move", "plan checkpoint list", "plan checkpoint list"},
		{"leading global flags stay in front", "plan -C dir --json status", "plan -C dir --json status"},
		{"a flag after a positional moves before it, behind --", "plan checkpoint show abcd --files", "plan checkpoint show --files -- abcd"},
		{"global flags after the command move to the front", "plan checkpoint list --json -y", "plan --json -y checkpoint list"},
		{"a global value flag after the command takes its value along", "plan status -C dir", "plan -C dir status"},
		{"--x=v global form", "plan status --workspace=dir", "plan --workspace=dir status"},
		{"--x=v local form", "plan rollback --to-checkpoint=abcd", "plan rollback --to-checkpoint=abcd"},
		{"a local value flag consumes the next token even if it looks positional",
			"plan log build --attempt 2", "plan log --attempt 2 -- build"},
		{"a local value flag's value is not mistaken for a flag",
			"plan correct --reason --json --decision d", "plan correct --reason --json --decision d"},
		{"mixed globals, locals and positionals", "plan diff aaaa bbbb --patch --json -C w",
			"plan --json -C w diff --patch -- aaaa bbbb"},
		{"-- and everything after it are preserved", "plan exec --id x -- echo --json -C dir",
			"plan exec --id x -- echo --json -C dir"},
		{"globals before -- move, those after stay", "plan exec --id x --json -- sh -c 'a b' --yes",
			"plan --json exec --id x -- sh -c 'a b' --yes"},
		{"a positional that looks like a flag after --", "plan checkpoint show --files -- -abcd",
			"plan checkpoint show --files -- -abcd"},
		{"a lone dash is a positional", "plan checkpoint show - --files", "plan checkpoint show --files -- -"},
		{"an unknown command is left alone", "plan frobnicate --json x", "plan frobnicate --json x"},
		{"an unknown subcommand keeps its group", "plan checkpoint bogus --json", "plan --json checkpoint bogus"},
		{"only global flags, no command", "plan --json", "plan --json"},
		{"a global value flag missing its value is left alone", "plan -C", "plan -C"},
		{"an unknown flag stays with the command", "plan status --bogus", "plan status --bogus"},
		{"a value flag at the end without its value", "plan rollback --to-checkpoint", "plan rollback --to-checkpoint"},
		{"positionals without flags need no --", "plan diff aaaa bbbb", "plan diff aaaa bbbb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Split on spaces, except inside single quotes (one token each).
			in := splitArgs(c.in)
			got, _ := reorder(app, in)
			if want := splitArgs(c.want); !slices.Equal(got, want) {
				t.Errorf("reorder(%q)\n got %q\nwant %q", in, got, want)
			}
		})
	}
}

// splitArgs splits on spaces; a single-quoted run is one token without its quotes.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

func TestReorderEmpty(t *testing.T) {
	app := (&handler{r: &Runner{}}).app()
	if got, dashed := reorder(app, nil); len(got) != 0 || dashed {
		t.Fatalf("reorder(nil) = %q", got)
	}
}

func TestShellJoinRoundTrip(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	cases := [][]string{
		{"plain"},
		{"with space", "two  spaces"},
		{"it's", `"double"`, `mixed'"quotes`},
		{"$HOME", "${PATH}", "$(echo no)", "`echo no`"},
		{"", "after-empty", ""},
		{"new\nline", "tab\there", "trailing\n"},
		{"*", "?", "[a]", "~", "a;b", "a|b", "a&b", "a>b", "#comment", "!bang"},
		{`back\slash`, `\'`, "'", "''"},
		{"--flag=v", "-x", "ünïcødé"},
	}
	for _, args := range cases {
		script := `printf '%s\0' ` + shellJoin(args)
		out, err := exec.Command("/bin/sh", "-c", script).Output() // #nosec G204 -- the test's own script
		if err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if !slices.Equal(got, args) {
			t.Errorf("shellJoin(%q) = %q: the shell saw %q", args, shellJoin(args), got)
		}
	}
}

func TestShellJoinLeavesPlainWordsUnquoted(t *testing.T) {
	plain := []string{"echo", "a-b_c.d/e=f:g,h+i@j%k", "X9"}
	if got, want := shellJoin(plain), strings.Join(plain, " "); got != want {
		t.Errorf("shellJoin(%q) = %q, want %q", plain, got, want)
	}
	if got := shellJoin([]string{""}); got != "''" {
		t.Errorf("shellJoin of an empty argument = %q, want ''", got)
	}
	if got := quoteAll([]string{"run", "a b"}); !slices.Equal(got, []string{"run", "'a b'"}) {
		t.Errorf("quoteAll = %q", got)
	}
}

func TestParseAge(t *testing.T) {
	good := map[string]time.Duration{
		"7d":    7 * 24 * time.Hour,
		"1d":    24 * time.Hour,
		"36h":   36 * time.Hour,
		"90m":   90 * time.Minute,
		"1h30m": 90 * time.Minute,
	}
	for in, want := range good {
		got, err := parseAge(in)
		if err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "bad", "0d", "-1d", "d", "7x", "07d", "1.5d", "0s", "-5h", "3 d"} {
		_, err := parseAge(in)
		if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("parseAge(%q): err = %v, want an invalid-input error", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "36h or 7d") {
			t.Errorf("parseAge(%q): the error %q gives no example", in, err)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	cases := map[int64]string{
		0:                      "0 B",
		1:                      "1 B",
		1023:                   "1023 B",
		1024:                   "1.0 KiB",
		1536:                   "1.5 KiB",
		1024*1024 - 1:          "1024.0 KiB",
		1024 * 1024:            "1.0 MiB",
		5 * 1024 * 1024 * 1024: "5.0 GiB",
		1 << 40:                "1.0 TiB",
		1 << 50:                "1.0 PiB",
		1 << 60:                "1.0 EiB",
	}
	for n, want := range cases {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatOctalAndModeString(t *testing.T) {
	cases := []struct {
		m          uint32
		oct, modes string
	}{
		{0, "000", "0000"},
		{0o7, "007", "0007"},
		{0o44, "044", "0044"},
		{0o644, "644", "0644"},
		{0o755, "755", "0755"},
		{0o777, "777", "0777"},
		{0o4755, "4755", "04755"},
		{0o17777777777, "17777777777", "017777777777"},
	}
	for _, c := range cases {
		if got := formatOctal(c.m); got != c.oct {
			t.Errorf("formatOctal(%o) = %q, want %q", c.m, got, c.oct)
		}
		if got := modeString(c.m); got != c.modes {
			t.Errorf("modeString(%o) = %q, want %q", c.m, got, c.modes)
		}
	}
	if got := formatOctal(^uint32(0)); got != fmt.Sprintf("%o", ^uint32(0)) {
		t.Errorf("formatOctal(max) = %q", got)
	}
}

func TestExitCode(t *testing.T) {
	code1 := 1
	failed := &application.DecisionFailedError{DecisionID: "d", Status: plan.Failed, ExitCode: &code1}
	cases := []struct {
		name string
		err  error
		code int
		kind string
	}{
		{"nil", nil, ExitOK, ""},
		{"usage", usagef("missing argument %s", "ID"), ExitUsage, "usage"},
		{"wrapped usage", fmt.Errorf("context: %w", usagef("x")), ExitUsage, "usage"},
		{"canceled", context.Canceled, ExitInterrupted, "interrupted"},
		{"wrapped canceled", fmt.Errorf("run: %w", context.Canceled), ExitInterrupted, "interrupted"},
		{"interrupted decision", fmt.Errorf("%w: %w", failed, context.Canceled), ExitInterrupted, "interrupted"},
		{"invalid", fault.Invalid("bad"), ExitInvalid, "invalid"},
		{"not found", fault.NotFound("gone"), ExitNotFound, "not_found"},
		{"conflict", fault.Conflict("busy"), ExitConflict, "conflict"},
		{"integrity", fault.Integrity("corrupt"), ExitIntegrity, "integrity"},
		{"wrapped integrity", fmt.Errorf("roll back: %w", fault.Integrity("corrupt")), ExitIntegrity, "integrity"},
		{"integrity joined with not found", errors.Join(fault.NotFound("gone"), fault.Integrity("corrupt")), ExitIntegrity, "integrity"},
		{"not found joined with integrity", errors.Join(fault.Integrity("corrupt"), fault.NotFound("gone")), ExitIntegrity, "integrity"},
		{"decision failed", failed, ExitInternal, "decision_failed"},
		{"decision failed joined with a classified error", errors.Join(failed, fault.Conflict("busy")), ExitConflict, "conflict"},
		{"unavailable", fmt.Errorf("open store: %w", fault.Unavailable("s3://b: connection refused")), ExitInternal, "unavailable"},
		{"denied", fmt.Errorf("open store: %w", fault.Denied("s3://b: the credentials were refused (AccessDenied)")), ExitDenied, "denied"},
		{"validation failed", fmt.Errorf("rollback: %w", &application.ValidationFailedError{Command: "make test", ExitCode: &code1}), ExitInternal, "validation_failed"},
		{"not valid", &application.NotValidError{}, ExitInternal, "validation_failed"},
		{"not valid joined with a classified error", errors.Join(&application.NotValidError{}, fault.Conflict("busy")), ExitConflict, "conflict"},
		{"declined", &declinedError{what: "rollback"}, ExitDeclined, "declined"},
		{"plain", errors.New("boom"), ExitInternal, "internal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, kind := exitCode(c.err)
			if code != c.code || kind != c.kind {
				t.Errorf("exitCode(%v) = %d %q, want %d %q", c.err, code, kind, c.code, c.kind)
			}
		})
	}
}

func TestTermProgress(t *testing.T) {
	var buf bytes.Buffer
	p := &termProgress{w: &buf}

	// Quick operations draw nothing.
	p.Start("scanning", 1000)
	p.Add(100)
	p.Add(100)
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("a bar was drawn before progressDelay: %q", buf.String())
	}

	// A long one draws a bar labelled with the operation, counting what was done before it appeared.
	p.Start("restoring", 1000)
	p.Add(100)
	if buf.Len() != 0 {
		t.Fatalf("a bar was drawn before progressDelay: %q", buf.String())
	}
	p.mu.Lock()
	p.start = time.Now().Add(-2 * time.Second)
	p.mu.Unlock()
	p.Add(150)
	if p.bar == nil {
		t.Fatal("no bar after progressDelay")
	}
	out := buf.String()
	if !strings.Contains(out, "restoring") {
		t.Errorf("the bar does not show its label: %q", out)
	}
	if !strings.Contains(out, "25%") {
		t.Errorf("the bar does not count the 250 of 1000 done so far: %q", out)
	}
	p.Add(250)
	p.Done()
	if p.bar != nil {
		t.Error("Done left the bar in place")
	}
	if p.done != 500 {
		t.Errorf("done = %d, want 500", p.done)
	}

	// Start resets: the next operation waits for its own delay.
	n := buf.Len()
	p.Start("verifying", 10)
	p.Add(1)
	if buf.Len() != n || p.bar != nil || p.done != 1 {
		t.Errorf("Start did not reset the bar: bar %v, done %d, output grew by %d", p.bar != nil, p.done, buf.Len()-n)
	}
	p.Done()
}

func TestConfirm(t *testing.T) {
	cases := []struct {
		name        string
		yes         bool
		interactive bool
		stdin       string
		ok          bool
		wantErr     string
	}{
		{name: "--yes asks nothing", yes: true, ok: true},
		{name: "no terminal", stdin: "y\n", wantErr: "pass --yes"},
		{name: "y", interactive: true, stdin: "y\n", ok: true},
		{name: "yes", interactive: true, stdin: "yes\n", ok: true},
		{name: "upper case and blanks", interactive: true, stdin: "  YES \n", ok: true},
		{name: "y without a newline", interactive: true, stdin: "y", ok: true},
		{name: "n", interactive: true, stdin: "n\n", wantErr: "cancelled"},
		{name: "anything else", interactive: true, stdin: "sure\n", wantErr: "cancelled"},
		{name: "empty line", interactive: true, stdin: "\n", wantErr: "cancelled"},
		{name: "EOF", interactive: true, stdin: "", wantErr: "cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var errOut bytes.Buffer
			h := &handler{yes: c.yes, r: &Runner{Stderr: &errOut, Stdin: strings.NewReader(c.stdin), Interactive: c.interactive}}
			err := h.confirm("rollback", "Rolling back would change 3 files.\n")
			if c.ok {
				if err != nil {
					t.Fatalf("confirm: %v", err)
				}
			} else {
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("confirm: err = %v, want one containing %q", err, c.wantErr)
				}
				// No terminal to ask on is a usage error; an answer other than yes is declined.
				want := ExitDeclined
				if !c.interactive {
					want = ExitUsage
				}
				if code, _ := exitCode(err); code != want {
					t.Errorf("exit code %d, want %d", code, want)
				}
			}
			asked := strings.Contains(errOut.String(), "Continue? [y/N] ")
			if asked != (c.interactive && !c.yes) {
				t.Errorf("asked = %v (stderr %q)", asked, errOut.String())
			}
			if asked && !strings.HasPrefix(errOut.String(), "Rolling back would change 3 files.\n") {
				t.Errorf("the summary is not shown before the question: %q", errOut.String())
			}
		})
	}
}

func TestConfirmReadError(t *testing.T) {
	boom := errors.New("tty gone")
	h := &handler{r: &Runner{Stderr: &bytes.Buffer{}, Stdin: iotest.ErrReader(boom), Interactive: true}}
	if err := h.confirm("correction", ""); !errors.Is(err, boom) {
		t.Fatalf("confirm with a failing stdin: %v, want %v", err, boom)
	}
}

func TestDefaultRunner(t *testing.T) {
	r := DefaultRunner("9.9.9")
	if r.Stdout != os.Stdout || r.Stderr != os.Stderr || r.Stdin != os.Stdin {
		t.Error("DefaultRunner is not on the standard streams")
	}
	if r.Version != "9.9.9" {
		t.Errorf("Version = %q", r.Version)
	}
	if r.Interactive != isTerminal(os.Stdin) || r.ProgressTerminal != isTerminal(os.Stderr) {
		t.Error("DefaultRunner does not ask the streams whether they are terminals")
	}
	// A regular file is never a terminal.
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file was taken for a terminal")
	}
}
