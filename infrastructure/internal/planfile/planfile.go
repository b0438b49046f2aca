// Package planfile reads plan files (YAML, see the contract's "Plan file") into plan definitions.
//
// Invariant: a file is either accepted whole or refused with a fault.ErrInvalid error that names the
// file, the line and the problem; unknown keys, duplicate keys and wrong types are refused rather
// than ignored, because a typo in a plan would otherwise run the wrong thing. A file that could only
// fail later (a text holding a NUL character, which no command or environment can carry; a
// directory named as the file) is refused the same way, before anything runs or is recorded.
package planfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// reservedEnv are the variables plan gives every decision; a plan may not override them (the
// attempt token is how a killed run's leftover processes are found).
var reservedEnv = []string{"PLAN_WORKSPACE", "PLAN_DECISION_ID", "PLAN_ATTEMPT", "PLAN_ATTEMPT_TOKEN"}

// MaxSize bounds a plan file; anything larger is not a plan someone wrote.
const MaxSize = 1 << 20

// File is a parsed plan file.
type File struct {
	Path      string
	Name      string
	Decisions []plan.Definition
}

// Load reads and validates the plan file at path.
func Load(path string) (File, error) {
	f, err := os.Open(path) // #nosec -- the user names the plan file to read
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return File{}, fault.NotFound("plan file %s does not exist", path)
		}
		return File{}, fmt.Errorf("read plan file: %w", err)
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return File{}, fault.Invalid("%s is a directory, not a plan file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return File{}, fmt.Errorf("read plan file %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return File{}, fault.Invalid("%s: larger than %d bytes", path, MaxSize)
	}
	return Parse(path, b)
}

type parser struct{ path string }

func (p parser) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return fault.Invalid("%s:%d: %s", p.path, line, fmt.Sprintf(format, args...))
}

// Parse validates a plan file's content; path is used in messages.
func Parse(path string, b []byte) (File, error) {
	p := parser{path: path}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return File{}, fault.Invalid("%s: the file is empty; a plan needs a name and decisions", path)
	} else if err != nil {
		return File{}, fault.Invalid("%s: not valid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	// A plan file is one document: a second one (after ---) would be silently ignored otherwise.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return File{}, fault.Invalid("%s: not valid YAML after the first document: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return File{}, fault.Invalid("%s:%d: a plan file holds one YAML document; found another after ---", path, line)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return File{}, fault.Invalid("%s: the file is empty; a plan needs a name and decisions", path)
	}
	if n := withNUL(&doc); n != nil {
		return File{}, p.errf(n, "a text holds a NUL character (\\0), which no command, environment variable or record can carry")
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return File{}, p.errf(root, "the top level must be a mapping with name and decisions")
	}
	out := File{Path: path}
	var decisions *yaml.Node
	err := p.fields(root, "plan", []string{"name", "decisions"}, func(key string, k, v *yaml.Node) error {
		switch key {
		case "name":
			s, err := p.str(v, "name")
			out.Name = s
			return err
		default:
			decisions = v
			return nil
		}
	})
	if err != nil {
		return File{}, err
	}
	if strings.TrimSpace(out.Name) == "" {
		return File{}, p.errf(root, "missing required key \"name\"")
	}
	if decisions == nil {
		return File{}, p.errf(root, "missing required key \"decisions\"")
	}
	if decisions.Kind != yaml.SequenceNode || len(decisions.Content) == 0 {
		return File{}, p.errf(decisions, "\"decisions\" must be a list with at least one decision")
	}
	seen := map[string]int{}
	for i, dn := range decisions.Content {
		dn = deref(dn)
		d, err := p.decision(i+1, dn)
		if err != nil {
			return File{}, err
		}
		if first, dup := seen[d.ID]; dup {
			return File{}, p.errf(dn, "decision %d: ID %q is already used by decision %d", i+1, d.ID, first)
		}
		seen[d.ID] = i + 1
		out.Decisions = append(out.Decisions, d)
	}
	return out, nil
}

// withNUL returns the first node (key or value) whose text holds a NUL character, or nil. A
// double-quoted "\0" makes one; no command line, environment variable or database text can carry
// it, so it is refused with the rest of the file rather than when a decision starts.
func withNUL(n *yaml.Node) *yaml.Node {
	if strings.ContainsRune(n.Value, 0) {
		return n
	}
	for _, c := range n.Content {
		if bad := withNUL(c); bad != nil {
			return bad
		}
	}
	return nil
}

// deref follows a YAML alias (*name) to the node its anchor (&name) marks.
func deref(n *yaml.Node) *yaml.Node {
	for range 32 { // anchors can alias aliases; bound the chase
		if n == nil || n.Kind != yaml.AliasNode || n.Alias == nil {
			return n
		}
		n = n.Alias
	}
	return n
}

func (p parser) fields(m *yaml.Node, what string, known []string, fn func(key string, k, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], deref(m.Content[i+1])
		if !slices.Contains(known, k.Value) {
			return p.errf(k, "%s: unknown key %q (known keys: %s)", what, k.Value, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return p.errf(k, "%s: key %q appears twice", what, k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p parser) str(v *yaml.Node, what string) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", p.errf(v, "%s must be a string", what)
	}
	return v.Value, nil
}

func (p parser) decision(n int, dn *yaml.Node) (plan.Definition, error) {
	var d plan.Definition
	if dn.Kind != yaml.MappingNode {
		return d, p.errf(dn, "decision %d must be a mapping with id and run", n)
	}
	what := fmt.Sprintf("decision %d", n)
	var idNode, runNode *yaml.Node
	err := p.fields(dn, what, []string{"id", "name", "run", "timeout", "env", "labels", "retries", "on_failure", "validate"}, func(key string, _, v *yaml.Node) error {
		var err error
		switch key {
		case "id":
			idNode = v
			d.ID, err = p.str(v, what+": id")
		case "name":
			d.Name, err = p.str(v, what+": name")
		case "run":
			runNode = v
			d.Run, err = p.str(v, what+": run")
		case "timeout":
			var s string
			if s, err = p.str(v, what+": timeout"); err == nil {
				d.Timeout, err = time.ParseDuration(s)
				if err != nil || d.Timeout <= 0 {
					err = p.errf(v, "%s: timeout %q is not a positive duration such as 30s or 5m", what, s)
				}
			}
		case "env":
			d.Env, err = p.env(v, what)
		case "labels":
			d.Labels, err = p.labels(v, what)
		case "retries":
			var s string
			if s, err = p.str(v, what+": retries"); err == nil {
				d.Retries, err = strconv.Atoi(s)
				if err != nil || d.Retries < 0 || d.Retries > plan.MaxRetries {
					err = p.errf(v, "%s: retries must be a whole number from 0 to %d, not %q", what, plan.MaxRetries, s)
				}
			}
		case "on_failure":
			if d.OnFailure, err = p.str(v, what+": on_failure"); err == nil {
				switch d.OnFailure {
				case "stop", "rollback", "continue":
				default:
					err = p.errf(v, "%s: on_failure must be stop, rollback or continue, not %q", what, d.OnFailure)
				}
			}
		case "validate":
			if d.Validate, err = p.str(v, what+": validate"); err == nil && strings.TrimSpace(d.Validate) == "" {
				err = p.errf(v, "%s: validate is an empty command", what)
			}
		}
		return err
	})
	if err != nil {
		return d, err
	}
	if idNode == nil {
		return d, p.errf(dn, "%s: missing required key \"id\"", what)
	}
	if err := plan.ValidateRunID(d.ID); err != nil {
		return d, p.errf(idNode, "%s: ID %q must match ^[a-z0-9][a-z0-9_-]{0,63}$", what, d.ID)
	}
	if runNode == nil || strings.TrimSpace(d.Run) == "" {
		n := dn
		if runNode != nil {
			n = runNode
		}
		return d, p.errf(n, "%s (%s): missing required key \"run\"", what, d.ID)
	}
	return d, nil
}

func (p parser) env(v *yaml.Node, what string) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.errf(v, "%s: env must be a mapping of NAME: value", what)
	}
	env := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		if k.Value == "" || strings.ContainsAny(k.Value, "=\x00") {
			return nil, p.errf(k, "%s: env name %q is not valid", what, k.Value)
		}
		if slices.Contains(reservedEnv, k.Value) {
			return nil, p.errf(k, "%s: env name %s is set by plan itself and cannot be overridden", what, k.Value)
		}
		if _, dup := env[k.Value]; dup {
			return nil, p.errf(k, "%s: env name %q appears twice", what, k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return nil, p.errf(val, "%s: env %s must be a scalar value", what, k.Value)
		}
		env[k.Value] = val.Value
	}
	return env, nil
}

// labels reads a decision's labels: a mapping of KEY: value that goes on its pre_decision
// checkpoints.
func (p parser) labels(v *yaml.Node, what string) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.errf(v, "%s: labels must be a mapping of KEY: value", what)
	}
	labels := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		if _, dup := labels[k.Value]; dup {
			return nil, p.errf(k, "%s: label %q appears twice", what, k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return nil, p.errf(val, "%s: label %s must be a scalar value", what, k.Value)
		}
		labels[k.Value] = val.Value
		if err := checkpoint.ValidateLabels(map[string]string{k.Value: val.Value}); err != nil {
			return nil, p.errf(k, "%s: %s", what, err.Error())
		}
	}
	return labels, nil
}
