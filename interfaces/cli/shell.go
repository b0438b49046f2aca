package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	ucli "github.com/urfave/cli/v2"
)

// bashCompletion asks plan itself for the candidates (urfave/cli's --generate-bash-completion),
// so it always matches the binary's commands and flags.
const bashCompletion = `# plan completion for bash: source <(plan completion bash)
_plan_complete() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(plan "${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(plan "${words[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
  fi
}
complete -o default -F _plan_complete plan
`

// zshCompletion reuses the bash function through zsh's bashcompinit.
const zshCompletion = `# plan completion for zsh: source <(plan completion zsh)
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion

// fishCompletion asks plan for the candidates as the bash script does; fish filters them by the
// word being typed and adds file names.
const fishCompletion = `# plan completion for fish: plan completion fish | source
function __plan_complete
    set -l words (commandline -opc)[2..-1]
    set -l cur (commandline -ct)
    if string match -q -- '-*' $cur
        plan $words $cur --generate-bash-completion 2>/dev/null
    else
        plan $words --generate-bash-completion 2>/dev/null
    end
end
complete -c plan -a '(__plan_complete)'
`

func (h *handler) shellCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "completion", Usage: "print a shell completion script", ArgsUsage: "bash|zsh|fish",
			Action: h.completion,
		},
		{Name: "man", Usage: "print the manual page (roff)", Action: h.man},
	}
}

func (h *handler) completion(c *ucli.Context) error {
	shell, err := arg(c, 0, "SHELL")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		script = fishCompletion
	default:
		return usagef("no completion for %q: bash, zsh or fish", shell)
	}
	_, err = fmt.Fprint(h.r.Stdout, script)
	return err
}

func (h *handler) man(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	_, err := fmt.Fprint(h.r.Stdout, manPage(c.App))
	return err
}

// manPage renders the app as a roff manual page in section 1, straight from the command definitions
// (no markdown on the way, so brackets in usage texts stay brackets and nothing is taken for a
// link): the global options, every visible command with its options (a flag that takes a value
// shows its placeholder: --store=URL), and EXIT STATUS, as the help pages end. It is rendered here
// rather than by urfave/cli's ToMan so that the binary need not link a markdown renderer
// (blackfriday's start-up tables were paid by every command; the Makefile builds with
// urfave_cli_no_docs, which leaves urfave/cli's own renderer out).
func manPage(app *ucli.App) string {
	var b strings.Builder
	b.WriteString(".nh\n.TH plan 1\n")
	b.WriteString(".SH NAME\nplan \\- " + roffText(app.Usage) + "\n")
	b.WriteString(".SH SYNOPSIS\n.B plan\n[GLOBAL OPTIONS] command [COMMAND OPTIONS] [ARGUMENTS...]\n")
	if app.Description != "" {
		b.WriteString(".SH DESCRIPTION\n" + roffText(app.Description) + "\n")
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	manFlags(&b, app.VisibleFlags())
	b.WriteString(".SH COMMANDS\n")
	manCommands(&b, "plan", app.VisibleCommands())
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitStatuses {
		fmt.Fprintf(&b, ".PP\n\\fB%d\\fP: %s\n", e.code, roffText(e.text))
	}
	b.WriteString(".PP\nSee docs/exit-codes.md for every case.\n")
	return b.String()
}

// manCommands writes each command under its full name, then its subcommands. urfave/cli's help
// command and the --help it adds to the running command are left out: no other command lists them.
func manCommands(b *strings.Builder, parent string, cmds []*ucli.Command) {
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		name := parent + " " + c.Name
		head := name
		if len(c.Subcommands) == 0 || c.Action != nil {
			if len(c.VisibleFlags()) > 0 {
				head += " [OPTIONS]"
			}
			if c.ArgsUsage != "" {
				head += " " + c.ArgsUsage
			}
		}
		fmt.Fprintf(b, ".SS \"%s\"\n", roffQuoted(head))
		if len(c.Aliases) > 0 {
			fmt.Fprintf(b, "(also: %s)\n.br\n", roffText(strings.Join(c.Aliases, ", ")))
		}
		b.WriteString(roffText(c.Usage) + "\n")
		if c.Description != "" {
			b.WriteString(".PP\n" + roffText(c.Description) + "\n")
		}
		manFlags(b, slices.DeleteFunc(c.VisibleFlags(), func(f ucli.Flag) bool { return f == ucli.HelpFlag }))
		manCommands(b, name, c.VisibleCommands())
	}
}

// manFlags writes one paragraph a flag: its names in bold, the value's placeholder the usage gives
// in backquotes (VALUE when it gives none), then its usage and default.
func manFlags(b *strings.Builder, flags []ucli.Flag) {
	for _, f := range flags {
		var names []string
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, dash+n)
		}
		tag := strings.Join(names, ", ")
		usage, value, def := "", "", ""
		if d, ok := f.(ucli.DocGenerationFlag); ok {
			var placeholder string
			placeholder, usage = unquoteUsage(d.GetUsage())
			if d.TakesValue() {
				value = "=" + cmp.Or(placeholder, "VALUE")
				def = d.GetDefaultText()
			}
		}
		fmt.Fprintf(b, ".PP\n\\fB%s\\fP%s: %s", roffText(tag), roffText(value), roffText(usage))
		if def != "" && def != `""` {
			fmt.Fprintf(b, " (default: %s)", roffText(def))
		}
		b.WriteString("\n")
	}
}

// unquoteUsage takes the first backquoted word of a flag's usage as its value's placeholder and
// drops the backquotes, as urfave/cli's help does.
func unquoteUsage(usage string) (placeholder, text string) {
	before, rest, ok := strings.Cut(usage, "`")
	if !ok {
		return "", usage
	}
	name, after, ok := strings.Cut(rest, "`")
	if !ok {
		return "", usage
	}
	return name, before + name + after
}

// roffText escapes text for a roff line: backslashes print as such, and a line that would start
// with a control character (. or ') starts with a zero-width \& instead; a character beyond ASCII
// is named (\[u2026]), which any roff reads whatever its input encoding.
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.ContainsFunc(s, func(r rune) bool { return r > unicode.MaxASCII }) {
		var b strings.Builder
		for _, r := range s {
			if r > unicode.MaxASCII {
				fmt.Fprintf(&b, `\[u%04X]`, r) // groff's and mandoc's name for any character
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// roffQuoted is text for a quoted macro argument: as roffText, with its double quotes doubled.
func roffQuoted(s string) string {
	return strings.ReplaceAll(roffText(strings.ReplaceAll(s, "\n", " ")), `"`, `""`)
}
