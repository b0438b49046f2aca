package application

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// Every name of the contract resolves to the checkpoint it means, and a name that two readings
// match is refused, never guessed.
func TestCheckpointNames(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	ctx := context.Background()
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if res.End == nil || res.End.Type() != checkpoint.PostRun || res.End.DecisionID() != "b" {
		t.Fatalf("the run's end checkpoint: %+v", res.End)
	}
	all, err := e.cps.List(ctx) // newest first: end, before b, before a
	if err != nil || len(all) != 3 {
		t.Fatalf("checkpoints: %d, %v", len(all), err)
	}
	p, _ := e.plans.Current(ctx)
	da, _ := p.Decision("a")
	db, _ := p.Decision("b")
	shorts, err := e.cps.ShortNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]checkpoint.ID{
		"@":                              all[0].ID(),
		"latest":                         all[0].ID(),
		"@~0":                            all[0].ID(),
		"@~2":                            all[2].ID(),
		"a^":                             da.Attempts()[0].CheckpointID,
		"b^":                             db.Attempts()[0].CheckpointID,
		"a":                              db.Attempts()[0].CheckpointID, // the state a left is where b started
		"b":                              res.End.ID(),                  // the state b left is the run's end
		string(all[1].ID()):              all[1].ID(),
		shorts[all[1].ID()]:              all[1].ID(),
		ident.Short(string(all[2].ID())): all[2].ID(),
	} {
		cp, err := e.cps.Resolve(ctx, ref)
		if err != nil || cp.ID() != want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", ref, cp, err, want)
		}
	}
	for ref, kind := range map[string]error{
		"@~3":       fault.ErrNotFound,
		"@~-1":      fault.ErrInvalid,
		"@~x":       fault.ErrInvalid,
		"@~01":      fault.ErrInvalid,
		"zz^":       fault.ErrNotFound,
		"x!":        fault.ErrInvalid,
		"nope":      fault.ErrNotFound, // could be a decision or a short name: neither
		"ffffffff":  fault.ErrNotFound,
		"kkkkkkkkk": fault.ErrNotFound,
	} {
		if _, err := e.cps.Resolve(ctx, ref); !errors.Is(err, kind) {
			t.Errorf("Resolve(%q) = %v, want %v", ref, err, kind)
		}
	}

	// A decision named like a checkpoint's ID prefix: both readings match, and the name is refused.
	twin := string(all[1].ID())[:23]
	if _, err := e.ps.Exec(ctx, ExecRequest{ID: twin, Command: "make twin"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.cps.Resolve(ctx, twin)
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("a name both a checkpoint prefix and a decision: %v", err)
	}
	// A decision that ran without a checkpoint has no DECISION^.
	e2 := newUseCaseEnv(t)
	e2.writes()
	if _, err := e2.runPlan(t, RunRequest{Decisions: defs("a"), NoCheckpoints: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.cps.Resolve(ctx, "a^"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a^ without a checkpoint: %v", err)
	}
	if _, err := e2.cps.Resolve(ctx, "a"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a without any checkpoint: %v", err)
	}
}

// Two checkpoints whose short forms share a prefix: that prefix is ambiguous and names both.
func TestShortNamePrefixAmbiguity(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	// Find two IDs whose short forms share four letters (a birthday search over generated IDs).
	byPrefix := map[string]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		id := ident.New(baseTime.Add(time.Duration(i) * time.Millisecond))
		p := ident.Short(id)[:4]
		if other, ok := byPrefix[p]; ok {
			a, b = other, id
		}
		byPrefix[p] = id
	}
	for _, id := range []string{a, b} {
		cp, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: baseTime, Root: tree.Sum([]byte("root"))})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.repo.Add(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	prefix := ident.Short(a)[:4]
	_, err := e.cps.Resolve(ctx, prefix)
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("shared short prefix %s: %v", prefix, err)
	}
	names, err := e.cps.ShortNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The names computed from a listing of every checkpoint are the same.
	all, err := e.cps.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if of := ShortNamesOf(all); !maps.Equal(of, names) {
		t.Fatalf("ShortNamesOf the listing %v, ShortNames %v", of, names)
	}
	for _, id := range []string{a, b} {
		n := names[checkpoint.ID(id)]
		if len(n) <= 4 {
			t.Fatalf("short name %q of %s does not tell it from its twin", n, id)
		}
		if cp, err := e.cps.Resolve(ctx, n); err != nil || string(cp.ID()) != id {
			t.Fatalf("Resolve(%s) = %v, %v", n, cp, err)
		}
	}
}

// label:KEY=VALUE and note:TEXT name the newest checkpoint that matches; a malformed selector is
// invalid input, one that matches nothing not found.
func TestCheckpointSelectors(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	ctx := context.Background()
	old, err := e.cps.Create(ctx, CreateRequest{Note: "before the refactor", Labels: map[string]string{"phase": "green"}})
	if err != nil {
		t.Fatal(err)
	}
	mid, err := e.cps.Create(ctx, CreateRequest{Note: "tests pass", Labels: map[string]string{"phase": "green", "ci": "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cps.Create(ctx, CreateRequest{Note: "wip"}); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]checkpoint.ID{
		"label:phase=green": mid.ID(), // the newest of two
		"label:ci=ok":       mid.ID(),
		"note:refactor":     old.ID(),
		"note:tests pass":   mid.ID(),
		"note:e":            mid.ID(), // "tests pass" and "before…" both; "wip" not: the newest match
	} {
		if err := checkName(ref); err != nil {
			t.Errorf("checkName(%q): %v", ref, err)
		}
		cp, err := e.cps.Resolve(ctx, ref)
		if err != nil || cp.ID() != want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", ref, cp, err, want)
		}
	}
	for ref, kind := range map[string]error{
		"label:phase=red": fault.ErrNotFound,
		"note:nowhere":    fault.ErrNotFound,
		"label:phase":     fault.ErrInvalid,
		"label:=x":        fault.ErrInvalid,
		"note:":           fault.ErrInvalid,
	} {
		if _, err := e.cps.Resolve(ctx, ref); !errors.Is(err, kind) || !strings.Contains(err.Error(), ref) {
			t.Errorf("Resolve(%q): %v, want %v naming it", ref, err, kind)
		}
	}
}

// @ (the head) reads the newest checkpoint alone when it is no safety checkpoint; a repository that
// fails to is the error, and a workspace without checkpoints says it has none, as @~N does.
func TestNewestAlone(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	if _, err := e.cps.Resolve(ctx, "@"); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no checkpoint yet") {
		t.Fatalf("@ of an empty workspace: %v", err)
	}
	e.writes()
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); err != nil {
		t.Fatal(err)
	}
	latest, err := e.repo.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := e.cps.Resolve(ctx, "@"); err != nil || cp.ID() != latest.ID() {
		t.Fatalf("@: %v, %v; want %s", cp, err, latest.ID())
	}
	e.repo.latestErr = errors.New("db gone")
	if _, err := e.cps.Resolve(ctx, "@"); !errors.Is(err, e.repo.latestErr) {
		t.Fatalf("@ with the newest unreadable: %v", err)
	}
	e.repo.latestErr = nil
	e.repo.getErr = errors.New("read gone")
	if _, err := e.cps.Resolve(ctx, "@~1"); !errors.Is(err, e.repo.getErr) {
		t.Fatalf("@~1 with the parent unreadable: %v", err)
	}
	e.repo.getErr = nil
}
