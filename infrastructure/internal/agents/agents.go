package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
)

// Scope says which settings file of an agent: the project's (committed with it) or the user's.
type Scope string

// The two scopes.
const (
	Project Scope = "project"
	User    Scope = "user"
)

// Hook is one entry plan installs: the agent's event and the tools it matches ("" for events that
// take no matcher).
type Hook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
}

// Agent is a coding agent plan installs hooks into.
type Agent struct {
	// Name is what plan's commands call it (plan agent install NAME, plan hook NAME EVENT).
	Name string
	// Title is its product name, for messages.
	Title string
	// projectFile is its settings file relative to the project directory; userFile relative to
	// the user's home (or to the directory homeEnv names, when set).
	projectFile, userFile, homeEnv string
	// Hooks are the entries plan installs, in the order they are written.
	Hooks []Hook
	// Note is what the user must know after an install (a trust step the agent asks for).
	Note string
}

// The mutating tools of each agent. Read-only tools are never matched: they cost nothing.
const (
	claudeTools = "Edit|Write|MultiEdit|NotebookEdit|Bash"
	// Codex calls its shell tool Bash and its file edits apply_patch (matched as Edit and Write too).
	codexTools  = "Bash|apply_patch|Edit|Write"
	geminiTools = "write_file|replace|run_shell_command"
)

var all = []Agent{{
	Name: "claude", Title: "Claude Code",
	projectFile: filepath.Join(".claude", "settings.json"), userFile: filepath.Join(".claude", "settings.json"),
	Hooks: []Hook{{"PreToolUse", claudeTools}, {"PostToolUse", claudeTools}, {"UserPromptSubmit", ""}, {"Stop", ""}, {"SessionEnd", ""}},
}, {
	Name: "codex", Title: "Codex",
	projectFile: filepath.Join(".codex", "hooks.json"), userFile: "hooks.json", homeEnv: "CODEX_HOME",
	Hooks: []Hook{{"PreToolUse", codexTools}, {"PostToolUse", codexTools}, {"UserPromptSubmit", ""}, {"Stop", ""}},
	Note: "Codex runs a new hook only once you have trusted it: review plan's hooks with /hooks in Codex " +
		"(codex exec --dangerously-bypass-hook-trust runs them without that step); project hooks also need the project trusted",
}, {
	Name: "gemini", Title: "Gemini CLI",
	projectFile: filepath.Join(".gemini", "settings.json"), userFile: filepath.Join(".gemini", "settings.json"),
	Hooks: []Hook{{"BeforeTool", geminiTools}, {"AfterTool", geminiTools}, {"BeforeAgent", ""}, {"AfterAgent", ""}, {"SessionEnd", ""}},
	Note:  "Gemini CLI runs a project's hooks only in a trusted folder",
}}

// Names lists the agents plan knows, in the order status reports them.
func Names() []string {
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Name
	}
	return names
}

// Lookup finds an agent by name; an unknown one is fault.Invalid naming the known ones.
func Lookup(name string) (Agent, error) {
	for _, a := range all {
		if a.Name == name {
			return a, nil
		}
	}
	return Agent{}, fault.Invalid("unknown agent %q: plan knows %s", name, strings.Join(Names(), ", "))
}

// File is the agent's settings file for scope: under projectDir for Project, else under the
// user's home (getenv("HOME")), or the directory the agent's own variable names (CODEX_HOME).
func (a Agent) File(scope Scope, projectDir string, getenv func(string) string) (string, error) {
	if scope == Project {
		return filepath.Join(projectDir, a.projectFile), nil
	}
	if a.homeEnv != "" {
		if dir := getenv(a.homeEnv); dir != "" {
			return filepath.Join(dir, a.userFile), nil
		}
	}
	home := getenv("HOME")
	if home == "" {
		return "", fault.Invalid("HOME is not set: plan cannot find %s's user settings", a.Title)
	}
	if a.homeEnv != "" {
		return filepath.Join(home, ".codex", a.userFile), nil
	}
	return filepath.Join(home, a.userFile), nil
}

// Command is the hook command plan installs for event: bin (quoted for the shell when it needs
// it) then `hook AGENT EVENT`.
func (a Agent) Command(bin, event string) string {
	return shellQuote(bin) + " hook " + a.Name + " " + event
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		safe := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)
		return !safe
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ours says command is plan's hook of this agent for event: `BIN hook AGENT EVENT`, BIN one word
// or one single-quoted string.
func (a Agent) ours(command, event string) bool {
	rest := strings.TrimSpace(command)
	if strings.HasPrefix(rest, "'") {
		// A quoted path: skip to the quote that closes it ('\'' continues it).
		i := 1
		for {
			j := strings.IndexByte(rest[i:], '\'')
			if j < 0 {
				return false
			}
			i += j + 1
			if !strings.HasPrefix(rest[i:], `\''`) {
				break
			}
			i += 3
		}
		rest = rest[i:]
	} else if i := strings.IndexAny(rest, " \t"); i > 0 {
		rest = rest[i:]
	} else {
		return false
	}
	f := strings.Fields(rest)
	return len(f) == 3 && f[0] == "hook" && f[1] == a.Name && f[2] == event
}

// Result tells what an install or uninstall did to a settings file.
type Result struct {
	Path string `json:"path"`
	// Changed says the file was written (false: it already was as asked, and was not touched).
	Changed bool `json:"changed"`
	// Created says the file did not exist before.
	Created bool `json:"created"`
}

// Install merges plan's hooks, calling bin, into the agent's settings file at path (created with
// its directory when missing).
func (a Agent) Install(path, bin string) (Result, error) {
	return a.edit(path, true, func(hooks *object) bool {
		changed := false
		for _, h := range a.Hooks {
			if a.place(hooks, h, a.Command(bin, h.Event)) {
				changed = true
			}
		}
		return changed
	})
}

// Uninstall removes plan's hooks of the agent from the settings file at path; a missing file is
// left missing.
func (a Agent) Uninstall(path string) (Result, error) {
	return a.edit(path, false, func(hooks *object) bool {
		changed := false
		for _, event := range slices.Clone(hooks.keys) {
			if a.strip(hooks, event) {
				changed = true
			}
		}
		return changed
	})
}

// place makes hook h the one plan entry of its event: left as it is when it already is exactly
// that, else every plan entry of the event is removed and h's group appended.
func (a Agent) place(hooks *object, h Hook, command string) bool {
	want := newObject()
	if h.Matcher != "" {
		want.set("matcher", h.Matcher)
	}
	entry := newObject()
	entry.set("type", "command")
	entry.set("command", command)
	want.set("hooks", []any{entry})
	v, _ := hooks.get(h.Event)
	groups, _ := v.([]any) // validated: absent or an array
	found := 0
	exact := false
	for _, g := range groups {
		n := a.count(asObject(g), h.Event)
		found += n
		if n > 0 && string(render(g)) == string(render(want)) {
			exact = true
		}
	}
	if found == 1 && exact {
		return false
	}
	a.strip(hooks, h.Event)
	v, _ = hooks.get(h.Event)
	groups, _ = v.([]any)
	hooks.set(h.Event, append(groups, want))
	return true
}

// count is the number of plan's entries in a matcher group.
func (a Agent) count(group *object, event string) int {
	v, _ := group.get("hooks")
	entries, _ := v.([]any) // validated: absent or a list of objects
	n := 0
	for _, e := range entries {
		if a.isOurs(asObject(e), event) {
			n++
		}
	}
	return n
}

func (a Agent) isOurs(entry *object, event string) bool {
	c, _ := entry.get("command")
	s, ok := c.(string)
	return ok && a.ours(s, event)
}

// strip removes plan's entries from an event's list, then the groups and the event it emptied.
func (a Agent) strip(hooks *object, event string) bool {
	v, _ := hooks.get(event)
	groups, ok := v.([]any)
	if !ok {
		return false
	}
	changed := false
	kept := []any{}
	for _, g := range groups {
		group := asObject(g)
		ev, _ := group.get("hooks")
		entries, ok := ev.([]any)
		if !ok {
			kept = append(kept, group)
			continue
		}
		rest := []any{}
		for _, e := range entries {
			if a.isOurs(asObject(e), event) {
				changed = true
				continue
			}
			rest = append(rest, e)
		}
		if len(rest) == 0 && len(entries) > 0 {
			continue
		}
		if len(rest) != len(entries) {
			group.set("hooks", rest)
		}
		kept = append(kept, group)
	}
	if !changed {
		return false
	}
	if len(kept) == 0 {
		hooks.del(event)
	} else {
		hooks.set(event, kept)
	}
	return true
}

// edit reads the settings file at path, checks its shape, lets fn change its hooks object and
// writes the file back when fn changed something.
func (a Agent) edit(path string, create bool, fn func(hooks *object) bool) (Result, error) {
	res := Result{Path: path}
	target, err := resolve(path)
	if err != nil {
		return res, err
	}
	data, mode, err := read(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return res, nil
		}
		res.Created, mode = true, 0o644
	case err != nil:
		return res, err
	}
	root, err := a.load(path, data)
	if err != nil {
		return res, err
	}
	hv, had := root.get("hooks")
	hooks, _ := hv.(*object)
	if !had {
		hooks = newObject()
	}
	if !fn(hooks) {
		return res, nil
	}
	switch {
	case len(hooks.keys) > 0:
		root.set("hooks", hooks)
	case had:
		root.del("hooks")
	}
	if res.Created {
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return res, fmt.Errorf("create %s: %w", filepath.Dir(target), err)
		}
	}
	if err := writeAtomic(target, render(root), mode); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}

// load parses a settings file and checks the shape of what plan reads and writes in it.
func (a Agent) load(path string, data []byte) (*object, error) {
	if strings.TrimSpace(string(data)) == "" {
		return newObject(), nil
	}
	v, err := parse(data)
	if err != nil {
		return nil, fault.Invalid("%s is not valid JSON (%v); plan leaves it as it is: fix it, then run this again", path, err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, fault.Invalid("%s is not a JSON object; plan leaves it as it is", path)
	}
	hv, ok := root.get("hooks")
	if !ok {
		return root, nil
	}
	hooks, ok := hv.(*object)
	if !ok {
		return nil, fault.Invalid(`%s: "hooks" is not an object; plan leaves the file as it is`, path)
	}
	for _, event := range hooks.keys {
		groups, ok := hooks.vals[event].([]any)
		if !ok {
			if a.installs(event) {
				return nil, fault.Invalid(`%s: hooks.%s is not a list; plan leaves the file as it is`, path, event)
			}
			continue // another setting kept under "hooks", none of plan's business
		}
		for i, g := range groups {
			group, ok := g.(*object)
			if !ok {
				return nil, fault.Invalid(`%s: hooks.%s[%d] is not an object; plan leaves the file as it is`, path, event, i)
			}
			ev, ok := group.get("hooks")
			if !ok {
				continue // a group without hooks: kept as it is
			}
			entries, ok := ev.([]any)
			if !ok {
				return nil, fault.Invalid(`%s: hooks.%s[%d].hooks is not a list; plan leaves the file as it is`, path, event, i)
			}
			for j, e := range entries {
				if _, ok := e.(*object); !ok {
					return nil, fault.Invalid(`%s: hooks.%s[%d].hooks[%d] is not an object; plan leaves the file as it is`, path, event, i, j)
				}
			}
		}
	}
	return root, nil
}

func (a Agent) installs(event string) bool {
	return slices.ContainsFunc(a.Hooks, func(h Hook) bool { return h.Event == event })
}
