package cli

import (
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// Completion scripts for the three shells, a manual page built from the command definitions, and
// help pages that end with the exit statuses.
func TestShellHabits(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F _plan_complete plan",
		"zsh":  "bashcompinit",
		"fish": "complete -c plan -a '(__plan_complete)'",
	} {
		o := invoke(Runner{}, "completion", shell)
		if o.code != ExitOK || !strings.Contains(o.stdout, want) {
			t.Errorf("completion %s: %v", shell, o)
		}
	}
	if o := invoke(Runner{}, "completion", "tcsh"); o.code != ExitUsage {
		t.Errorf("an unknown shell: %v", o)
	}
	if o := invoke(Runner{}, "completion"); o.code != ExitUsage {
		t.Errorf("no shell: %v", o)
	}
	o := invoke(Runner{}, "man")
	if o.code != ExitOK || !strings.Contains(o.stdout, ".TH plan 1") || !strings.Contains(o.stdout, "rollback") {
		t.Errorf("man: %v", o)
	}
	for _, args := range [][]string{{"--help"}, {"rollback", "--help"}, {"checkpoint", "--help"}, {"checkpoint", "create", "--help"}} {
		if o := invoke(Runner{}, args...); !strings.Contains(o.stdout, "EXIT STATUS:") || !strings.Contains(o.stdout, "6 integrity") {
			t.Errorf("%v does not end with the exit statuses: %v", args, o)
		}
	}
}

// --quiet leaves stderr to warnings and errors: no decision output and no narration.
func TestQuiet(t *testing.T) {
	dir := newWorkspace(t)
	loud := mustPlan(t, dir, "exec", "--id", "one", "--", "echo", "decision-output")
	if !strings.Contains(loud.stderr, "decision-output") || !strings.Contains(loud.stderr, "plan: running one") {
		t.Fatalf("without --quiet: %v", loud)
	}
	quiet := mustPlan(t, dir, "--quiet", "exec", "--id", "two", "--", "echo", "decision-output")
	if quiet.stderr != "" {
		t.Fatalf("--quiet still wrote to stderr: %q", quiet.stderr)
	}
}

// Version prefers what the build set, and otherwise describes the binary from its build info.
func TestVersion(t *testing.T) {
	if v := Version("v9.9.9"); v != "v9.9.9" {
		t.Fatalf("override: %q", v)
	}
	if v := Version(""); v == "" || v == "unknown" {
		t.Fatalf("from build info: %q", v)
	}
}

// The manual page is roff made from the command definitions: brackets stay brackets, option names
// are minus signs, a flag's value shows its placeholder (VALUE when its usage names none) and its
// default, hidden commands stay out, and nothing in a text can be read as a roff request.
func TestManPageFromDefinitions(t *testing.T) {
	page := invoke(Runner{}, "man").stdout
	for _, want := range []string{
		".TH plan 1\n", ".SH NAME\nplan \\- safe, fast undo", ".SH GLOBAL OPTIONS\n", ".SH COMMANDS\n",
		".PP\n\\fB--workspace, -C\\fP=DIR: start in DIR instead of the current directory (like git -C): the workspace is found from there, and relative paths are taken from DIR (default: \".\")\n", "s3://bucket[/prefix]",
		`.SS "plan checkpoint create [OPTIONS]"`, ".SH EXIT STATUS\n.PP\n\\fB0\\fP: success\n", "\\fB130\\fP: interrupted\n",
		"See docs/exit-codes.md",
		`.SS "plan restore [OPTIONS] REF --target DIR [--] [PATH\[u2026]]"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the manual page lacks %q", want)
		}
	}
	if strings.Contains(page, ".SS \"plan checkpoint help") || strings.Contains(page, "--generate-bash-completion") {
		t.Error("the manual page lists urfave/cli's help command or completion flag")
	}
	for line := range strings.Lines(page) {
		if strings.ContainsFunc(line, func(r rune) bool { return r > 127 }) {
			t.Errorf("a line beyond ASCII: %q", line)
		}
	}

	app := &ucli.App{
		Name: "plan", Usage: "u", Description: ".starts with a dot\n'and a quote \\ backslash",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "plain", Usage: "takes a value it does not name"},
			&ucli.StringFlag{Name: "open", Usage: "an `unterminated placeholder", Value: "x"},
			&ucli.BoolFlag{Name: "b", Usage: "a switch"},
		},
		Commands: []*ucli.Command{
			{Name: "shown", Aliases: []string{"s"}, Usage: "shown \"quoted\"", Description: "more", ArgsUsage: "ARG"},
			{Name: "secret", Hidden: true, Usage: "hidden"},
			{Name: "help", Usage: "urfave/cli's"},
		},
	}
	got := manPage(app)
	for _, want := range []string{
		".SH DESCRIPTION\n\\&.starts with a dot\n\\&'and a quote \\e backslash\n",
		"\\fB--plain\\fP=VALUE: takes a value it does not name\n",
		"\\fB--open\\fP=VALUE: an `unterminated placeholder (default: \"x\")\n",
		"\\fB-b\\fP: a switch\n",
		".SS \"plan shown ARG\"\n(also: s)\n.br\nshown \"quoted\"\n.PP\nmore\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the page of a made-up app lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "secret") || strings.Contains(got, "urfave/cli's") {
		t.Errorf("a hidden command or help is on the page:\n%s", got)
	}
	if q := roffQuoted("a \"b\"\nc"); q != `a ""b"" c` {
		t.Errorf("roffQuoted: %q", q)
	}
}
