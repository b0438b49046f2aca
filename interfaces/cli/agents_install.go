package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// agentInstallCommands are plan agent install, uninstall and status: plan's hooks in the settings of
// the coding agents (infrastructure/internal/agents says what is written where).
func (h *handler) agentInstallCommands() *ucli.Command {
	scope := []ucli.Flag{
		&ucli.BoolFlag{Name: "project", Usage: "the project's settings file, in the workspace (the default)"},
		&ucli.BoolFlag{Name: "user", Usage: "your own settings file, under your home directory: every project the agent runs in"},
	}
	install := append([]ucli.Flag{
		&ucli.StringFlag{Name: "bin", Usage: "the plan `COMMAND` the hooks run (default: the absolute path of this plan; `--bin plan` looks it up on the agent's PATH)"},
	}, scope...)
	return &ucli.Command{
		Name:  "agent",
		Usage: "install plan's hooks into a coding agent (claude, codex, gemini): a checkpoint before every tool call that changes files",
		Subcommands: []*ucli.Command{{
			Name: "install", Usage: "add plan's hooks to AGENT's settings (idempotent; initialises the workspace for --project)",
			ArgsUsage: "claude|codex|gemini", Flags: install, Action: h.agentInstall,
		}, {
			Name: "uninstall", Usage: "remove plan's hooks from AGENT's settings (the rest of the file is kept)",
			ArgsUsage: "claude|codex|gemini", Flags: scope, Action: h.agentUninstall,
		}, {
			Name: "status", Usage: "show which agents have plan's hooks, in the project's and your settings",
			Action: h.agentStatus,
		}},
	}
}

// agentView is the --json output of plan agent install and uninstall.
type agentView struct {
	Agent string               `json:"agent"`
	Scope bootstrap.AgentScope `json:"scope"`
	Path  string               `json:"path"`
	// Changed says the settings file was written; Created that it did not exist.
	Changed bool `json:"changed"`
	Created bool `json:"created"`
	// Workspace is the workspace the project's hooks checkpoint ("" for --user); Initialised says
	// this install created it.
	Workspace   string `json:"workspace"`
	Initialised bool   `json:"initialised"`
	Note        string `json:"note"`
	// Unreadable are the workspace's paths the hooks' checkpoints cannot read (install only; absent
	// when there are none).
	Unreadable []string `json:"unreadable,omitempty"`
}

// agentStatusView is the --json output of plan agent status.
type agentStatusView struct {
	Project string                  `json:"project"`
	Agents  []bootstrap.AgentStatus `json:"agents"`
}

// agentTarget reads the agent argument and scope flags and finds the settings file.
func (h *handler) agentTarget(c *ucli.Context) (bootstrap.Agent, bootstrap.AgentScope, string, error) {
	if c.NArg() != 1 {
		if c.NArg() == 0 {
			return bootstrap.Agent{}, "", "", usagef("name the agent: plan %s claude|codex|gemini", commandPath(c))
		}
		return bootstrap.Agent{}, "", "", noExtraArgs(c, 1)
	}
	a, err := bootstrap.LookupAgent(c.Args().First())
	if err != nil {
		return bootstrap.Agent{}, "", "", usagef("%v", err)
	}
	scope := bootstrap.AgentProject
	switch {
	case c.Bool("project") && c.Bool("user"):
		return a, "", "", usagef("--project and --user exclude each other")
	case c.Bool("user"):
		scope = bootstrap.AgentUser
	}
	path, err := a.File(scope, h.projectDir(), h.getenv)
	return a, scope, path, err
}

// projectDir is where the project's settings live: the workspace's root, or the directory plan
// runs in when it is in none (install makes it one).
func (h *handler) projectDir() string {
	if root, found, _ := h.discover(); found {
		return root
	}
	return h.root
}

func (h *handler) agentInstall(c *ucli.Context) error {
	a, scope, path, err := h.agentTarget(c)
	if err != nil {
		return err
	}
	bin := c.String("bin")
	if bin == "" {
		if bin, err = h.self(); err != nil {
			return err
		}
	}
	// A malformed settings file is refused before anything else is done.
	if _, err := a.Inspect(path, scope); err != nil {
		return err
	}
	v := agentView{Agent: a.Name, Scope: scope, Path: path, Note: a.Note}
	if scope == bootstrap.AgentProject {
		h.exactRoot = true
		h.root = filepath.Dir(filepath.Dir(path))
		err := h.withInit(c.Context, func(app *bootstrap.App, created bool) error {
			v.Workspace, v.Initialised = app.Services.Setup.Layout.Root, created
			unreadable, err := bootstrap.Unreadable(c.Context, app.Services.Setup.Layout)
			if len(unreadable) > 0 {
				v.Unreadable = unreadable
				h.warn(bootstrap.UnreadableWarning(unreadable))
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	res, err := a.Install(path, bin)
	if err != nil {
		return err
	}
	v.Changed, v.Created = res.Changed, res.Created
	return h.emit(v, func(w io.Writer) {
		if v.Initialised {
			_, _ = fmt.Fprintf(w, "Initialised plan workspace in %s\n", quote(v.Workspace))
		}
		if res.Changed {
			_, _ = fmt.Fprintf(w, "Installed plan's hooks for %s in %s\n", a.Title, quote(path))
		} else {
			_, _ = fmt.Fprintf(w, "plan's hooks for %s are already installed in %s\n", a.Title, quote(path))
		}
		if a.Note != "" {
			_, _ = fmt.Fprintf(w, "note: %s\n", a.Note)
		}
	})
}

func (h *handler) agentUninstall(c *ucli.Context) error {
	a, scope, path, err := h.agentTarget(c)
	if err != nil {
		return err
	}
	res, err := a.Uninstall(path)
	if err != nil {
		return err
	}
	v := agentView{Agent: a.Name, Scope: scope, Path: path, Changed: res.Changed}
	return h.emit(v, func(w io.Writer) {
		if res.Changed {
			_, _ = fmt.Fprintf(w, "Removed plan's hooks for %s from %s\n", a.Title, quote(path))
		} else {
			_, _ = fmt.Fprintf(w, "%s has no plan hooks to remove\n", quote(path))
		}
	})
}

func (h *handler) agentStatus(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	v := agentStatusView{Project: h.projectDir(), Agents: []bootstrap.AgentStatus{}}
	for _, name := range bootstrap.AgentNames() {
		a, _ := bootstrap.LookupAgent(name)
		for _, scope := range []bootstrap.AgentScope{bootstrap.AgentProject, bootstrap.AgentUser} {
			path, err := a.File(scope, v.Project, h.getenv)
			if err != nil {
				return err
			}
			v.Agents = append(v.Agents, a.Report(path, scope))
		}
	}
	return h.emit(v, func(w io.Writer) {
		for _, st := range v.Agents {
			line := fmt.Sprintf("%-7s %-8s %-10s %s", st.Agent, st.Scope, st.State, quote(st.Path))
			switch {
			case st.Error != "":
				line += " (" + st.Error + ")"
			case st.State == "partial":
				line += fmt.Sprintf(" (missing: %v)", st.Missing)
			}
			_, _ = fmt.Fprintln(w, line)
		}
	})
}

// discover finds the workspace holding h.root, as every command does.
func (h *handler) discover() (string, bool, error) {
	return bootstrap.Discover(h.root, filepath.SplitList(h.getenv("PLAN_CEILING_DIRECTORIES")))
}

// self is the absolute path of the running plan, its links resolved.
func (h *handler) self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the plan binary (pass --bin): %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
}
