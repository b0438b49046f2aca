package application

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// funcRegistry holds the functions registered by name in this process.
type funcRegistry struct {
	mu    sync.RWMutex
	funcs map[string]port.DecisionFunc
}

func newFuncRegistry() *funcRegistry { return &funcRegistry{funcs: map[string]port.DecisionFunc{}} }

// Register makes fn the Go function called name, which decisions name with
// plan.FuncCommand(name, host) as their command (RunRequest) or ExecRequest.FuncName. A name is
// registered once per process.
func (s *PlanService) Register(name string, fn port.DecisionFunc) error {
	if _, err := plan.FuncCommand(name, s.ops.hostName()); err != nil {
		return err
	}
	if fn == nil {
		return fault.Invalid("Go function %q: nil function", name)
	}
	r := s.ops.funcs
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.funcs[name]; dup {
		return fault.Conflict("a Go function called %q is registered already", name)
	}
	r.funcs[name] = fn
	return nil
}

// Host is the host program's name as Go-function decisions record it.
func (s *PlanService) Host() string { return s.ops.hostName() }

func (o *Operations) hostName() string {
	if o.host == "" {
		return "go-host"
	}
	return o.host
}

// funcOf returns the Go function a decision's command names, from the call's own (extra) or the
// registered ones; nil, nil for a shell command. A Go function this process does not have is a
// conflict naming the program that has it: the plan CLI in particular cannot run one.
func (o *Operations) funcOf(id, run string, extra map[string]port.DecisionFunc) (port.DecisionFunc, error) {
	name, host, ok := plan.ParseFuncCommand(run)
	if !ok {
		return nil, nil
	}
	if fn := extra[name]; fn != nil {
		return fn, nil
	}
	o.funcs.mu.RLock()
	fn := o.funcs.funcs[name]
	o.funcs.mu.RUnlock()
	if fn != nil {
		return fn, nil
	}
	return nil, fault.Conflict("decision %q is the Go function %q of the host program %s, which this program does not have: "+
		"only %s can run it (the plan CLI runs shell commands only); from the CLI, `plan correct --run CMD` replaces it with a shell command "+
		"and `plan correct --no-reexecute` only reverts it", id, name, host, host)
}

// funcsReady checks, before anything changes, that every decision of ids that is a Go function can
// run here.
func (o *Operations) funcsReady(p *plan.Plan, ids []string, extra map[string]port.DecisionFunc) error {
	for _, id := range ids {
		d, err := p.Decision(id)
		if err != nil {
			return err
		}
		if _, err := o.funcOf(id, d.Definition().Run, extra); err != nil {
			return err
		}
	}
	return nil
}

// hostFuncs completes the short form "go-func:NAME" of a definition's command with this host's
// name, so a run's decisions can name a function without spelling the host.
func (o *Operations) hostFuncs(defs []plan.Definition) []plan.Definition {
	var out []plan.Definition
	for i, d := range defs {
		if name, ok := strings.CutPrefix(d.Run, "go-func:"); ok && !strings.Contains(name, "@") {
			if out == nil {
				out = slices.Clone(defs)
			}
			out[i].Run = d.Run + "@" + o.hostName()
		}
	}
	if out == nil {
		return defs
	}
	return out
}

// GenerateDecisionID names a decision that `plan exec` (or ExecRequest) was given no ID for:
// WORD-N, where WORD is the command's program (its base name, lower case, anything but a-z and
// 0-9 turned into "-", at most 24 characters; the function's name for a Go function; "exec" when
// nothing is left) and N the smallest number from 1 that no decision of p has yet. So
// `plan exec -- make test` is make-1, then make-2; `plan exec -- ./scripts/gen.sh` is gen-sh-1.
func GenerateDecisionID(p *plan.Plan, run string) string {
	word := "exec"
	if name, _, ok := plan.ParseFuncCommand(run); ok {
		word = slug(name)
	} else {
		for _, f := range strings.Fields(run) {
			if strings.Contains(f, "=") && !strings.HasPrefix(f, "=") {
				continue // an environment assignment before the program
			}
			word = slug(path.Base(strings.Trim(f, `'"`)))
			break
		}
	}
	return nextDecisionID(p, word)
}

// nextDecisionID is WORD-N with the smallest N from 1 that no decision of p has ("exec" for an
// empty word).
func nextDecisionID(p *plan.Plan, word string) string {
	if word == "" {
		word = "exec"
	}
	for n := 1; ; n++ {
		id := fmt.Sprintf("%s-%d", word, n)
		if _, err := p.Decision(id); err != nil {
			return id
		}
	}
}

// slug keeps a-z and 0-9 of s (lower-cased), turns every other run of characters into one "-" and
// trims it to 24 characters with no "-" at either end.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 24 {
				break
			}
			continue
		}
		dash = true
	}
	return strings.Trim(b.String(), "-")
}
