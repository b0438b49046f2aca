package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// commandGroups orders plan --help's commands by task, as git's help does: urfave/cli's own
// categories are sorted by name. A command in no group is listed under "other", so none is lost.
var commandGroups = []struct {
	title    string
	commands []string
}{
	{"start a workspace", []string{"init", "clone", "workspaces", "store", "demo"}},
	{"record and look", []string{"checkpoint", "status", "diff", "cat", "ls", "show", "log", "history", "browse"}},
	{"go back", []string{"rollback", "restore", "undo", "redo", "recover"}},
	{"plans and decisions", []string{"run", "exec", "plans"}},
	{"correct a decision", []string{"correct", "revert", "correction", "conflicts", "resolve", "validate"}},
	{"coding agents", []string{"agent", "sessions", "rewind", "mcp"}},
	{"upkeep", []string{"watch", "verify", "gc", "stats", "doctor"}},
	{"this program", []string{"help", "completion", "man"}},
}

// groupedHelpTemplate is urfave/cli's app help with its COMMANDS section made of commandGroups:
// the visible commands of cmds, by task, names aligned across the groups.
func groupedHelpTemplate(cmds []*ucli.Command) string {
	width := 0
	for _, c := range cmds {
		if !c.Hidden {
			width = max(width, len(c.Name))
		}
	}
	var b strings.Builder
	listed := map[string]bool{}
	group := func(title string, names []string) {
		var rows []*ucli.Command
		for _, n := range names {
			if c := findCommand(cmds, n); c != nil && !c.Hidden && !listed[c.Name] {
				rows = append(rows, c)
				listed[c.Name] = true
			}
		}
		if len(rows) == 0 {
			return
		}
		_, _ = fmt.Fprintf(&b, "\n   %s:\n", title)
		for _, c := range rows {
			_, _ = fmt.Fprintf(&b, "     %-*s  %s\n", width, c.Name, c.Usage)
		}
	}
	var rest []string
	for _, g := range commandGroups {
		group(g.title, g.commands)
	}
	for _, c := range cmds {
		if !listed[c.Name] {
			rest = append(rest, c.Name)
		}
	}
	group("other", rest)
	// The text goes into a template: nothing in it may read as an action.
	text := strings.NewReplacer("{{", "{ {", "}}", "} }").Replace(strings.TrimSuffix(b.String(), "\n"))
	return strings.Replace(ucli.AppHelpTemplate, `COMMANDS:{{template "visibleCommandCategoryTemplate" .}}`, "COMMANDS:"+text, 1)
}

// helpCommand is `plan help [COMMAND [SUBCOMMAND]]`: the help page `plan COMMAND --help` prints,
// reached the way git and jj users look for it. An unknown name is a usage error with the nearest
// command suggested, as for an unknown command.
func (h *handler) helpCommand() *ucli.Command {
	return &ucli.Command{
		Name: "help", Usage: "show the help of plan or of a command", ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: h.help,
	}
}

func (h *handler) help(c *ucli.Context) error {
	if c.NArg() == 0 {
		return ucli.ShowAppHelp(c)
	}
	cmds := c.App.Commands
	var path []string
	var cmd *ucli.Command
	for _, name := range c.Args().Slice() {
		if cmd != nil && len(cmd.Subcommands) == 0 {
			return usagef("%q has no subcommand %q (see `plan help %s`)", strings.Join(path, " "), name, strings.Join(path, " "))
		}
		next := findCommand(cmds, name)
		if next == nil {
			return unknownCommand(name, cmds)
		}
		cmd, cmds = next, next.Subcommands
		path = append(path, cmd.Name)
	}
	// The page is the one `plan PATH --help` prints: urfave/cli fills a command's help (its
	// subcommands, categories, full name) only on the way to running it, so run that.
	if code := h.r.Run(c.Context, append(append([]string{"plan"}, path...), "--help")); code != ExitOK {
		return &silentExit{code: code}
	}
	return nil
}

// flagString renders a flag in help pages and the man page as urfave/cli does, without the default
// of a flag whose default is its type's zero value: "(default: false)" on every switch, or
// "(default: 0)" where 0 means "not given", says nothing and reads as a setting.
func flagString(f ucli.Flag) string {
	s := defaultFlagString(f)
	for _, zero := range []string{" (default: false)", " (default: 0)", ` (default: "")`} {
		s = strings.TrimSuffix(s, zero)
	}
	return s
}

// defaultFlagString is urfave/cli's own rendering, which flagString trims.
var defaultFlagString = ucli.FlagStringer

// The help of every run of plan renders flags with flagString. Set once, before any run: a
// package-level setting of urfave/cli, like the help flag parseMu guards.
func init() { ucli.FlagStringer = flagString }

// findCommand is the command of cmds that has name (or alias) name, hidden ones included.
func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
