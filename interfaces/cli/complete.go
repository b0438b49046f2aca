package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// completionFlag ends the command line a completion script passes: "complete the next word".
const completionFlag = "--generate-bash-completion"

// completionTimeout bounds the workspace reads a completion makes: a shell waits on it.
const completionTimeout = 2 * time.Second

// A word to complete is one of these kinds of value.
type valueKind int

const (
	noValue valueKind = iota
	checkpointValue
	decisionValue
	planValue
	correctionValue
	sessionValue
	toolCallValue
)

// flagKinds are the flags whose values plan can offer, by flag name.
var flagKinds = map[string]valueKind{
	"to-checkpoint": checkpointValue,
	"decision":      decisionValue,
	"plan":          planValue,
	"session":       sessionValue,
	"tool-call":     toolCallValue,
}

// complete prints the candidates for the word after words (the command line without the program
// name, the word being typed included when it starts with "-"), one per line, for the completion
// scripts of `plan completion`: subcommands, flags, and the names a value can take (checkpoints as
// @, @~N, their short names and decision names; decisions; plans; corrections; agent sessions and
// their tool calls). It never fails:
// a workspace it cannot read offers no names, and the shell falls back to file names.
func (h *handler) complete(ctx context.Context, app *ucli.App, words []string) {
	cmds, flags := app.Commands, slices.Clone(app.Flags)
	var path []string
	var leaf *ucli.Command
	positional := 0
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "-C" || w == "--workspace" {
			if i+1 < len(words) {
				h.root = words[i+1]
			}
		}
		if strings.HasPrefix(w, "-") && w != "-" {
			n, known := arity(flagArity(flags), w)
			// Last, a flag that takes a value wants it; one plan does not know in full is the
			// word being typed. A whole switch was typed before the word to complete.
			if i == len(words)-1 && (n > 1 || !known) {
				h.completeLast(ctx, w, flags)
				return
			}
			i += n - 1
			continue
		}
		if c := findCommand(cmds, w); c != nil && positional == 0 {
			path, leaf = append(path, c.Name), c
			cmds, flags = c.Subcommands, append(flags, c.Flags...)
			continue
		}
		positional++
	}
	if leaf == nil || len(leaf.Subcommands) > 0 {
		for _, c := range cmds {
			if !c.Hidden {
				_, _ = fmt.Fprintln(h.r.Stdout, c.Name)
			}
		}
		return
	}
	h.printValues(ctx, argKind(path, leaf.ArgsUsage, positional))
}

// completeLast completes after a last word that is a flag: the flag's value when it takes one
// plan can name, else the flags themselves (the word is the one being typed).
func (h *handler) completeLast(ctx context.Context, w string, flags []ucli.Flag) {
	name := strings.TrimLeft(w, "-")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			if fl, ok := f.(ucli.DocGenerationFlag); ok && fl.TakesValue() {
				h.printValues(ctx, flagKinds[name])
				return
			}
		}
	}
	for _, f := range flags {
		if vf, ok := f.(ucli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		_, _ = fmt.Fprintln(h.r.Stdout, "--"+f.Names()[0])
	}
}

// argKind is the kind of the n-th positional argument of the command at path, read from its
// ArgsUsage ("REF PATH", "FROM [TO]", "DECISION", "ID").
func argKind(path []string, argsUsage string, n int) valueKind {
	args := strings.Fields(argsUsage)
	if n >= len(args) {
		return noValue
	}
	switch strings.Trim(args[n], "[]…") {
	case "REF", "FROM", "TO":
		return checkpointValue
	case "DECISION":
		return decisionValue
	case "ID":
		switch path[0] {
		case "checkpoint":
			return checkpointValue
		case "correction":
			return correctionValue
		}
	}
	return noValue
}

// printValues prints the names a value of kind can take in the workspace.
func (h *handler) printValues(ctx context.Context, kind valueKind) {
	if kind == noValue {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	root, err := h.resolveRoot()
	if err != nil {
		return
	}
	h.root = root
	app, err := h.open(ctx, false)
	if err != nil {
		return
	}
	defer func() { _ = app.Close() }()
	for _, name := range valueNames(ctx, app, kind) {
		_, _ = fmt.Fprintln(h.r.Stdout, name)
	}
}

// valueNames lists the names of kind, newest first; what cannot be read is left out.
func valueNames(ctx context.Context, app *bootstrap.App, kind valueKind) []string {
	s := app.Services
	var out []string
	switch kind {
	case checkpointValue:
		out = append(out, "@", "@~1", "@~2")
		if cps, err := s.Checkpoints.List(ctx); err == nil {
			if shorts, err := s.Checkpoints.ShortNames(ctx); err == nil {
				for _, cp := range cps {
					out = append(out, shorts[cp.ID()])
				}
			}
		}
		for _, d := range decisionNames(ctx, app) {
			out = append(out, d+"^", d)
		}
	case decisionValue:
		out = decisionNames(ctx, app)
	case planValue:
		if ps, err := s.Plans.Plans(ctx); err == nil {
			for _, p := range ps {
				out = append(out, p.Plan.Name())
			}
		}
	case correctionValue:
		if cs, err := s.Corrections.List(ctx); err == nil {
			for _, c := range cs {
				out = append(out, c.ID())
			}
		}
	case sessionValue, toolCallValue:
		vs, _ := s.Agents.Sessions(ctx, "") // none when they cannot be read
		for _, v := range vs {
			if kind == sessionValue {
				out = append(out, v.ID)
				continue
			}
			for _, turn := range v.Turns {
				for _, c := range turn.Calls {
					out = append(out, c.ID)
				}
			}
		}
	}
	return out
}

// decisionNames are the decisions of the current plan.
func decisionNames(ctx context.Context, app *bootstrap.App) []string {
	p, err := app.Services.Plans.Status(ctx)
	if err != nil || p == nil {
		return nil
	}
	var out []string
	for _, d := range p.Decisions() {
		out = append(out, d.ID())
	}
	return out
}
