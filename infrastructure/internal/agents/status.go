package agents

import (
	"errors"
	"io/fs"

	"github.com/planhq/plan/domain/fault"
)

// Status is what an agent's settings file holds of plan's hooks.
type Status struct {
	Agent string `json:"agent"`
	Scope Scope  `json:"scope"`
	Path  string `json:"path"`
	// Exists says the settings file exists.
	Exists bool `json:"exists"`
	// State is "installed" (every hook plan installs is there, once, as install writes it),
	// "partial" (some are, or differ) or "absent" (none).
	State string `json:"state"`
	// Installed lists the events that have plan's hook; Missing those that lack it.
	Installed []string `json:"installed"`
	Missing   []string `json:"missing"`
	// Commands are the hook commands found, one per installed event, in the order of Installed.
	Commands []string `json:"commands"`
	// Error says why the file could not be read ("" when it could), State then "invalid" (not
	// JSON, or hooks of another shape: install refuses it) or "unreadable".
	Error string `json:"error,omitempty"`
}

// Inspect reads the agent's settings file at path without changing it. A malformed file is the
// same fault.Invalid install gives; Report turns such errors into the status's state.
func (a Agent) Inspect(path string, scope Scope) (Status, error) {
	st := Status{Agent: a.Name, Scope: scope, Path: path, Installed: []string{}, Missing: []string{}, Commands: []string{}}
	target, err := resolve(path)
	if err != nil {
		return st, err
	}
	data, _, err := read(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, err
	default:
		st.Exists = true
	}
	root, err := a.load(path, data)
	if err != nil {
		return st, err
	}
	hv, _ := root.get("hooks")
	hooks, _ := hv.(*object)
	if hooks == nil {
		hooks = newObject()
	}
	exact := 0
	for _, h := range a.Hooks {
		v, _ := hooks.get(h.Event)
		groups, _ := v.([]any)
		var found []string
		exactHere := false
		for _, g := range groups {
			group := asObject(g)
			ev, _ := group.get("hooks")
			entries, _ := ev.([]any)
			for _, e := range entries {
				if entry := asObject(e); a.isOurs(entry, h.Event) {
					c, _ := entry.get("command")
					s, _ := c.(string)
					found = append(found, s)
					m, _ := group.get("matcher")
					if ms, _ := m.(string); ms == h.Matcher && len(entries) == 1 {
						exactHere = true
					}
				}
			}
		}
		if len(found) == 0 {
			st.Missing = append(st.Missing, h.Event)
			continue
		}
		if len(found) == 1 && exactHere {
			exact++
		}
		st.Installed = append(st.Installed, h.Event)
		st.Commands = append(st.Commands, found[0])
	}
	switch {
	case len(st.Installed) == 0:
		st.State = "absent"
	case len(st.Missing) == 0 && exact == len(a.Hooks):
		st.State = "installed"
	default:
		st.State = "partial"
	}
	return st, nil
}

// Report is Inspect that never fails: a file it cannot read is reported with State "invalid"
// (malformed) or "unreadable", and the reason in Error.
func (a Agent) Report(path string, scope Scope) Status {
	st, err := a.Inspect(path, scope)
	if err == nil {
		return st
	}
	st.State, st.Error = "unreadable", err.Error()
	if errors.Is(err, fault.ErrInvalid) {
		st.State = "invalid"
	}
	return st
}
