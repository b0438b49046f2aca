package ref_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ref"
	"github.com/planhq/plan/domain/tree"
)

// Every form of the grammar is read as what it is; the first form that applies wins.
func TestParse(t *testing.T) {
	for name, want := range map[string]ref.Ref{
		"@":                        {Kind: ref.Newest, Text: "@"},
		"latest":                   {Kind: ref.Newest, Text: "latest"},
		"@~3":                      {Kind: ref.Newest, Text: "@~3"},
		"@~x":                      {Kind: ref.Newest, Text: "@~x"}, // its number is Back's to check
		"build^":                   {Kind: ref.Before, Text: "build^", Decision: "build"},
		"x!^":                      {Kind: ref.Before, Text: "x!^", Decision: "x!"},
		"^":                        {Kind: ref.Name, Text: "^"},
		"build":                    {Kind: ref.Name, Text: "build"},
		"claude-s1/toolu_01^":      {Kind: ref.Scoped, Text: "claude-s1/toolu_01^", Plan: "claude-s1", Decision: "toolu_01", Caret: true},
		"claude-s1/toolu_01":       {Kind: ref.Scoped, Text: "claude-s1/toolu_01", Plan: "claude-s1", Decision: "toolu_01"},
		"a.b:c#2^":                 {Kind: ref.Scoped, Text: "a.b:c#2^", Plan: "a.b:c", Turn: 2, Caret: true},
		"p#12":                     {Kind: ref.Scoped, Text: "p#12", Plan: "p", Turn: 12},
		"p#0":                      {Kind: ref.Name, Text: "p#0"}, // turns count from 1
		"p#01":                     {Kind: ref.Name, Text: "p#01"},
		"p#x^":                     {Kind: ref.Before, Text: "p#x^", Decision: "p#x"},
		"p/x!":                     {Kind: ref.Name, Text: "p/x!"},
		"/d":                       {Kind: ref.Name, Text: "/d"},
		"@^":                       {Kind: ref.Before, Text: "@^", Decision: "@"},
		"0123456789abcdef01234567": {Kind: ref.Name, Text: "0123456789abcdef01234567"},
	} {
		if got := ref.Parse(name); got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestBack(t *testing.T) {
	for name, want := range map[string]int{"@": 0, "latest": 0, "@~0": 0, "@~2": 2, "@~10": 10} {
		if n, err := ref.Parse(name).Back(); err != nil || n != want {
			t.Errorf("Back(%q) = %d, %v; want %d", name, n, err, want)
		}
	}
	for _, name := range []string{"@~", "@~-1", "@~x", "@~01", "@~+1"} {
		if _, err := ref.Parse(name).Back(); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "@~N wants a whole number") {
			t.Errorf("Back(%q): %v", name, err)
		}
	}
}

// Check refuses, before any lookup, the names no form fits; @~N's number waits for Back.
func TestCheck(t *testing.T) {
	for _, name := range []string{
		"@", "latest", "@~x", "p#3", "p/d^", "label:phase=green", "note:x",
		"0123", "0123456789abcdef01234567", "kkkk", "build", "build^", "abc",
	} {
		if err := ref.Parse(name).Check(); err != nil {
			t.Errorf("Check(%q): %v", name, err)
		}
	}
	for name, want := range map[string]string{
		"x!":          "malformed checkpoint name \"x!\": want an ID or its prefix (4 to 24 hex characters)",
		"x!^":         "malformed checkpoint name \"x!^\"",
		"@^":          "malformed checkpoint name \"@^\"",
		"^":           "malformed checkpoint name \"^\"",
		"label:phase": "malformed checkpoint name \"label:phase\": label:KEY=VALUE (",
		"label:=x":    "malformed checkpoint name \"label:=x\": label:KEY=VALUE (",
		"note:":       "malformed checkpoint name \"note:\": note:TEXT wants some text",
		"":            "checkpoint", // hex (of no length) that no decision can be named
	} {
		err := ref.Parse(name).Check()
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want invalid input containing %q", name, err, want)
		}
	}
	if err := ref.Parse("x!").Check(); !strings.Contains(err.Error(), "a short name (4 to 12 letters k-z), @, @~N, DECISION, DECISION^, PLAN/DECISION[^], PLAN#TURN[^], label:KEY=VALUE or note:TEXT") {
		t.Errorf("the malformed name's message: %v", err)
	}
}

// The readings of a Name, and what is said when none of them named a checkpoint.
func TestReadingsAndUnmatched(t *testing.T) {
	full := ref.Parse("0123456789abcdef01234567")
	if !full.IsID() || !full.IsFullID() || full.IsShort() || !full.IsDecision() {
		t.Errorf("a full ID's readings: %+v", full)
	}
	short := ref.Parse("kkkkk")
	if short.IsID() || short.IsFullID() || !short.IsShort() || !short.IsDecision() {
		t.Errorf("a short name's readings: %+v", short)
	}
	if d := ref.Parse("build_1"); d.IsID() || d.IsShort() || !d.IsDecision() {
		t.Errorf("a decision's readings: %+v", d)
	}
	for name, want := range map[string]error{
		"nope":      fault.ErrNotFound,
		"ffffffff":  fault.ErrNotFound,
		"kkkkkkkkk": fault.ErrNotFound,
		"abc":       fault.ErrInvalid, // hex of the wrong length: a mistyped ID, though a decision could be so named
		"x!":        fault.ErrInvalid,
	} {
		if err := ref.Parse(name).Unmatched(); !errors.Is(err, want) {
			t.Errorf("Unmatched(%q) = %v, want %v", name, err, want)
		}
	}
	if err := ref.Parse("nope").Unmatched(); err.Error() != fault.NotFound("no checkpoint nope (nor a decision of the current plan by that name)").Error() {
		t.Errorf("not found: %v", err)
	}
	if err := ref.Parse("abc").Unmatched(); !strings.Contains(err.Error(), "checkpoint") || strings.Contains(err.Error(), "malformed checkpoint name") {
		t.Errorf("hex of the wrong length: %v", err)
	}
	if err := ref.Parse("x!").Unmatched(); !strings.Contains(err.Error(), "malformed checkpoint name \"x!\"") {
		t.Errorf("no reading: %v", err)
	}
}

// A selector picks by label or by note, and says what it picks.
func TestSelectors(t *testing.T) {
	cp, err := checkpoint.New(checkpoint.Params{
		ID: "0123456789abcdef01234567", Type: checkpoint.Manual, CreatedAt: time.Unix(0, 0),
		Root: tree.Sum([]byte("root")), Note: "tests pass", Labels: map[string]string{"phase": "green"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"label:phase=green": true, "label:phase=red": false, "label:ci=ok": false,
		"note:tests": true, "note:pass": true, "note:wip": false,
	} {
		if got := ref.Parse(name).Matches(cp); got != want {
			t.Errorf("%s matches: %v, want %v", name, got, want)
		}
	}
	if w := ref.Parse("label:phase=green").What(); w != "carries the label phase=green" {
		t.Errorf("label: %q", w)
	}
	if w := ref.Parse(`note:tests "pass"`).What(); w != `has a note containing "tests \"pass\""` {
		t.Errorf("note: %q", w)
	}
}
