package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"

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
	page, err := manPage(c.App)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(h.r.Stdout, page)
	return err
}

// manPage renders the app as a roff manual page in section 1, from urfave/cli's markdown with three
// repairs: brackets in usage texts stay brackets (markdown would take "bucket[/prefix] (endpoint…)"
// for a link), a flag that takes a value shows its placeholder (--store=URL, not --store=""), and the
// page ends with EXIT STATUS, as the help pages do.
func manPage(app *ucli.App) (string, error) {
	escapeBrackets(app.Flags)
	escapeCommandBrackets(app.Commands)
	md, err := app.ToMarkdown()
	if err != nil {
		return "", err
	}
	// Compiled here, not at start-up: only the man page needs them.
	var (
		// flagValue is a flag of the markdown that takes a value: **--store**="": usage.
		flagValue = regexp.MustCompile(`(\*\*[^*\n]+\*\*(?:, \*\*[^*\n]+\*\*)*)="": ([^\n]*)`)
		// placeholder is the value's name a flag's usage gives in backquotes.
		placeholder = regexp.MustCompile("`([^`]+)`")
	)
	md = flagValue.ReplaceAllStringFunc(md, func(m string) string {
		sub := flagValue.FindStringSubmatch(m)
		value := "VALUE"
		if p := placeholder.FindStringSubmatch(sub[2]); p != nil {
			value = p[1]
		}
		return sub[1] + "=" + value + ": " + sub[2]
	})
	var b strings.Builder
	b.WriteString("% plan 1\n\n") // the title line: name and section
	b.WriteString(md)
	b.WriteString("\n# EXIT STATUS\n\n")
	for _, e := range exitStatuses {
		fmt.Fprintf(&b, "**%d**: %s\n\n", e.code, e.text)
	}
	b.WriteString("See docs/exit-codes.md for every case.\n")
	return string(md2man.Render([]byte(b.String()))), nil
}

func escapeBrackets(flags []ucli.Flag) {
	for _, f := range flags {
		switch f := f.(type) {
		case *ucli.StringFlag:
			f.Usage = bracketEscaper.Replace(f.Usage)
		case *ucli.BoolFlag:
			f.Usage = bracketEscaper.Replace(f.Usage)
		case *ucli.IntFlag:
			f.Usage = bracketEscaper.Replace(f.Usage)
		case *ucli.StringSliceFlag:
			f.Usage = bracketEscaper.Replace(f.Usage)
		}
	}
}

// escapeCommandBrackets also drops what urfave/cli adds to the running command (man itself) as it
// runs: its --help flag and help subcommand, which no other command lists in the page.
func escapeCommandBrackets(cmds []*ucli.Command) {
	for _, c := range cmds {
		c.Flags = slices.DeleteFunc(c.Flags, func(f ucli.Flag) bool { return f == ucli.HelpFlag })
		c.Subcommands = slices.DeleteFunc(c.Subcommands, func(s *ucli.Command) bool { return s.Name == "help" })
		c.Usage = bracketEscaper.Replace(c.Usage)
		c.ArgsUsage = bracketEscaper.Replace(c.ArgsUsage)
		escapeBrackets(c.Flags)
		escapeCommandBrackets(c.Subcommands)
	}
}

// bracketEscaper makes markdown print brackets as they are.
var bracketEscaper = strings.NewReplacer("[", `\[`, "]", `\]`)
