// Package ref is the grammar of checkpoint names, accepted everywhere a checkpoint is:
//   - a full ID or a unique prefix of it (at least ident.MinPrefix hex characters);
//   - a unique prefix of its short form (ident.Short: letters k..z), as `checkpoint list` shows it;
//   - `@` (or `latest`), the head (the checkpoint the workspace stands on), and `@~N`, its Nth parent;
//   - `DECISION^`, the pre_decision checkpoint of the latest attempt of a decision of the current
//     plan, and `DECISION`, a checkpoint of the state that attempt left (the next decision's
//     pre_decision checkpoint, or the run's end);
//   - `PLAN/DECISION^`, `PLAN/DECISION`, `PLAN#N^` and `PLAN#N`: a decision, or a turn of an agent
//     session, of a named plan (the plan named in full, letters, digits, '.', '_', ':' and '-');
//   - `label:KEY=VALUE`, the newest checkpoint carrying that label, and `note:TEXT`, the newest one
//     whose note contains TEXT.
//
// Parse reads a name into a Ref, a pure reading of its text; finding the checkpoint it names
// (against the repositories) is the application's. A name two readings match (a decision called
// like a checkpoint prefix) is ambiguous: invalid input listing both, never a guess.
package ref

import (
	"strconv"
	"strings"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

// Kind is the form of a name.
type Kind int

// The forms, in the order Parse tries them (the first that applies wins).
const (
	// Name is an ID or its prefix, a short name or DECISION: readings tried against the
	// repositories (IsID, IsShort, IsDecision).
	Name Kind = iota
	// Selector is label:KEY=VALUE or note:TEXT (Matches, What).
	Selector
	// Scoped is PLAN/DECISION[^] or PLAN#N[^] (Plan, Decision or Turn, Caret).
	Scoped
	// Newest is @, latest or @~N (Back).
	Newest
	// Before is DECISION^ (Decision).
	Before
)

// Ref is a checkpoint name as read by Parse.
type Ref struct {
	Kind Kind
	Text string // the name as given
	// Plan is a Scoped name's plan; Decision a Scoped or Before name's decision ("" for a turn);
	// Turn a Scoped name's turn (from 1); Caret says a Scoped name has the ^ form.
	Plan     string
	Decision string
	Turn     int
	Caret    bool

	isLabel            bool // a Selector's form: label:KEY=VALUE, else note:TEXT
	label, value, note string
	err                error // a malformed selector's
}

var scopedPlan = ident.NewPattern("A-Za-z0-9", "A-Za-z0-9._:-", 200) // ^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$

// Parse reads name. It never fails: a name no form fits is a Name whose readings all fail (Check
// says so before any lookup; Unmatched after them).
func Parse(name string) Ref {
	if r, ok := parseSelector(name); ok {
		return r
	}
	if r, ok := parseScoped(name); ok {
		return r
	}
	switch {
	case name == "@" || name == "latest" || strings.HasPrefix(name, "@~"):
		return Ref{Kind: Newest, Text: name}
	case strings.HasSuffix(name, "^") && len(name) > 1:
		return Ref{Kind: Before, Text: name, Decision: strings.TrimSuffix(name, "^")}
	}
	return Ref{Kind: Name, Text: name}
}

func parseSelector(name string) (Ref, bool) {
	if l, ok := strings.CutPrefix(name, "label:"); ok {
		k, v, err := checkpoint.ParseLabel(l)
		if err != nil {
			return Ref{Kind: Selector, Text: name, err: fault.Invalid("malformed checkpoint name %q: label:KEY=VALUE (%v)", name, err)}, true
		}
		return Ref{Kind: Selector, Text: name, isLabel: true, label: k, value: v}, true
	}
	if text, ok := strings.CutPrefix(name, "note:"); ok {
		if text == "" {
			return Ref{Kind: Selector, Text: name, err: fault.Invalid("malformed checkpoint name %q: note:TEXT wants some text", name)}, true
		}
		return Ref{Kind: Selector, Text: name, note: text}, true
	}
	return Ref{}, false
}

func parseScoped(name string) (Ref, bool) {
	base, caret := strings.CutSuffix(name, "^")
	if i := strings.LastIndexByte(base, '#'); i > 0 && scopedPlan.Match(base[:i]) {
		n, err := strconv.Atoi(base[i+1:])
		if err != nil || n < 1 || base[i+1:] != strconv.Itoa(n) {
			return Ref{}, false
		}
		return Ref{Kind: Scoped, Text: name, Plan: base[:i], Turn: n, Caret: caret}, true
	}
	if i := strings.LastIndexByte(base, '/'); i > 0 && scopedPlan.Match(base[:i]) && plan.ValidateDecisionID(base[i+1:]) == nil {
		return Ref{Kind: Scoped, Text: name, Plan: base[:i], Decision: base[i+1:], Caret: caret}, true
	}
	return Ref{}, false
}

// Check refuses a name that has none of the forms of the grammar, before any lookup (and before a
// command waits for the workspace lock). @~N's number is checked by Back, when it is resolved.
func (r Ref) Check() error {
	switch r.Kind {
	case Selector:
		return r.err
	case Newest, Scoped:
		return nil
	}
	switch base := strings.TrimSuffix(r.Text, "^"); {
	case r.IsID(), r.IsShort(), plan.ValidateDecisionID(base) == nil:
		return nil
	case strings.Trim(r.Text, "0123456789abcdef") == "":
		return ident.ValidateRef("checkpoint", r.Text)
	}
	return r.malformed()
}

func (r Ref) malformed() error {
	return fault.Invalid("malformed checkpoint name %q: want an ID or its prefix (%d to %d hex characters), "+
		"a short name (%d to %d letters k-z), @, @~N, DECISION, DECISION^, PLAN/DECISION[^], PLAN#TURN[^], label:KEY=VALUE or note:TEXT", r.Text, ident.MinPrefix, ident.Length, ident.MinPrefix, ident.ShortLength)
}

// Back is how many parents back from the head a Newest name goes (@ and latest: 0); a malformed
// @~N is invalid input.
func (r Ref) Back() (int, error) {
	if r.Text == "@" || r.Text == "latest" {
		return 0, nil
	}
	n, err := strconv.Atoi(r.Text[2:])
	if err != nil || n < 0 || r.Text[2:] != strconv.Itoa(n) {
		return 0, fault.Invalid("malformed checkpoint name %q: @~N wants a whole number N >= 0", r.Text)
	}
	return n, nil
}

// IsID reports whether a Name can be a checkpoint ID or its prefix.
func (r Ref) IsID() bool { return ident.ValidateRef("checkpoint", r.Text) == nil }

// IsShort reports whether a Name can be a prefix of a short form.
func (r Ref) IsShort() bool { return ident.IsShortRef(r.Text) }

// IsFullID reports whether a Name has the length of a full ID: no decision's name in practice, so
// a checkpoint it names is the only reading tried.
func (r Ref) IsFullID() bool { return len(r.Text) == ident.Length }

// IsDecision reports whether a Name can be a decision's.
func (r Ref) IsDecision() bool { return plan.ValidateDecisionID(r.Text) == nil }

// Unmatched is the error for a Name none of whose readings named a checkpoint: hex of the wrong
// length is a mistyped ID (far likelier than a decision so named), a name no reading applies to is
// malformed, and any other is not found.
func (r Ref) Unmatched() error {
	switch {
	case !r.IsID() && strings.Trim(r.Text, "0123456789abcdef") == "":
		return ident.ValidateRef("checkpoint", r.Text)
	case !r.IsID() && !r.IsShort() && !r.IsDecision():
		return r.malformed()
	}
	return fault.NotFound("no checkpoint %s (nor a decision of the current plan by that name)", r.Text)
}

// Matches reports whether a well-formed Selector picks c.
func (r Ref) Matches(c *checkpoint.Checkpoint) bool {
	if r.isLabel {
		return c.HasLabels(map[string]string{r.label: r.value})
	}
	return strings.Contains(c.Note(), r.note)
}

// What says what a well-formed Selector picks: "carries the label KEY=VALUE" or "has a note
// containing "TEXT"".
func (r Ref) What() string {
	if r.isLabel {
		return "carries the label " + strings.TrimPrefix(r.Text, "label:")
	}
	return "has a note containing " + strconv.Quote(r.note)
}
