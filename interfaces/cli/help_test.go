package cli

import (
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// plan help [COMMAND [SUBCOMMAND]] prints the page `plan … --help` prints; a name plan does not know
// is a usage error that suggests the nearest one.
func TestHelpCommand(t *testing.T) {
	for _, path := range [][]string{{}, {"status"}, {"checkpoint"}, {"checkpoint", "prune"}, {"help"}} {
		o := invoke(Runner{}, append([]string{"help"}, path...)...)
		want := invoke(Runner{}, append(path, "--help")...)
		if o.code != ExitOK || o.stdout != want.stdout || !strings.Contains(o.stdout, "EXIT STATUS:") {
			t.Errorf("help %v:\n%v\nwant the page of --help:\n%v", path, o, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "chekpoint"}, `unknown command "chekpoint": did you mean "checkpoint"?`},
		{[]string{"help", "checkpoint", "prnue"}, `unknown command "prnue": did you mean "prune"?`},
		{[]string{"help", "status", "extra"}, `"status" has no subcommand "extra" (see ` + "`plan help status`)"},
	} {
		if o := invoke(Runner{}, c.args...); o.code != ExitUsage || !strings.Contains(o.stderr, c.want) {
			t.Errorf("%v: want exit 2 and %q\n%v", c.args, c.want, o)
		}
	}
	// The page of a command run through help is the command's, at its full name.
	if o := invoke(Runner{}, "help", "checkpoint", "prune"); !strings.Contains(o.stdout, "plan checkpoint prune [command options]") {
		t.Errorf("help checkpoint prune: %v", o)
	}
}

// A flag's default is shown only when it says something: no "(default: false)" on switches, no
// sentinel (-1, 0) standing for "not given".
func TestHelpShowsNoEmptyDefaults(t *testing.T) {
	for _, path := range [][]string{{"checkpoint", "prune"}, {"correction", "prune"}, {"history"}, {"log"}, {"rollback"}} {
		o := invoke(Runner{}, append(path, "--help")...)
		for _, noise := range []string{"(default: false)", "(default: -1)", "(default: 0)", `(default: "")`} {
			if strings.Contains(o.stdout, noise) {
				t.Errorf("%v --help shows %s:\n%s", path, noise, o.stdout)
			}
		}
	}
	if o := invoke(Runner{}, "rollback", "--help"); !strings.Contains(o.stdout, `(default: "both")`) {
		t.Errorf("a real default is no longer shown:\n%s", o.stdout)
	}
}

// The manual page keeps the brackets of usage texts, names each flag's value, lists no help
// subcommand, and ends with the exit statuses.
func TestManPage(t *testing.T) {
	o := invoke(Runner{}, "man")
	if o.code != ExitOK {
		t.Fatalf("man: %v", o)
	}
	for _, want := range []string{
		`.TH plan 1`,
		`s3://bucket[/prefix] (endpoint and credentials`, // not a link
		`\fB--store\fP=URL`,  // the placeholder, not =""
		`\fB--mode\fP=VALUE`, // a flag without one
		`.SH EXIT STATUS`,
		`\fB8\fP: declined`,
		`\fB130\fP: interrupted`,
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("the man page lacks %q", want)
		}
	}
	for _, bad := range []string{`=""`, `\[la]`, "Shows a list of commands"} {
		if strings.Contains(o.stdout, bad) {
			t.Errorf("the man page has %q", bad)
		}
	}
}

// plan --help lists the commands by task, as git's does, each visible command once under its
// group (a new one must be given a group: "other" is for none), and hides hook, which only agents
// run (plan help hook still shows its page).
func TestHelpGroupsCommandsByTask(t *testing.T) {
	o := invoke(Runner{}, "--help")
	section := o.stdout[strings.Index(o.stdout, "COMMANDS:"):strings.Index(o.stdout, "GLOBAL OPTIONS:")]
	if strings.Contains(section, "\n   other:") || strings.Contains(section, " hook ") {
		t.Errorf("an ungrouped or hidden command is listed:\n%s", section)
	}
	var prev int
	for _, g := range commandGroups {
		at := strings.Index(section, "\n   "+g.title+":\n")
		if at < prev {
			t.Errorf("group %q missing or out of order:\n%s", g.title, section)
		}
		prev = at
	}
	for _, c := range (&handler{r: &Runner{}}).app().Commands {
		if n := strings.Count(section, "\n     "+c.Name+" "); n != map[bool]int{true: 0, false: 1}[c.Hidden] {
			t.Errorf("%s is listed %d times:\n%s", c.Name, n, section)
		}
	}
	if o := invoke(Runner{}, "help", "hook"); o.code != ExitOK || !strings.Contains(o.stdout, "plan hook [command options] claude|codex|gemini EVENT") {
		t.Errorf("plan help hook: %v", o)
	}
	other := groupedHelpTemplate([]*ucli.Command{{Name: "frob", Usage: "a {{template}} in it"}})
	if !strings.Contains(other, "\n   other:\n     frob  a { {template} } in it") {
		t.Errorf("a command in no group: %s", other)
	}
}
