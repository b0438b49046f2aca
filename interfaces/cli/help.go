package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

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
