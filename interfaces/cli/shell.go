package cli

import (
	"fmt"

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
		if script, err = c.App.ToFishCompletion(); err != nil {
			return err
		}
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
	page, err := c.App.ToManWithSection(1)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(h.r.Stdout, page)
	return err
}
