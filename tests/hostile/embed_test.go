package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan"
	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// hostRuns opens dir as a host program does (plan.Open), runs each of fns as a Go-function
// decision called by its id, in order, and closes the workspace again; it returns the tree after
// each decision.
func hostRuns(t *testing.T, dir string, fns []struct {
	id string
	fn plan.Func
}) [][]tree.Entry {
	t.Helper()
	ctx := context.Background()
	app, err := plan.Open(ctx, plan.Config{Root: dir, Init: true, Host: "hostile-host", Getenv: testkit.Getenv(t)})
	if err != nil {
		t.Fatal(err)
	}
	var trees [][]tree.Entry
	for _, f := range fns {
		if _, err := app.Services.Plans.Exec(ctx, plan.ExecRequest{ID: f.id, Func: f.fn}); err != nil {
			_ = app.Close()
			t.Fatalf("exec %s: %v", f.id, err)
		}
		got, err := treetest.Read(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		trees = append(trees, got)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	return trees
}

// The done-when of the embedding API: a host runs two decisions as Go functions, then `plan undo`
// from the CLI (the real binary) takes the second back, byte for byte; and the CLI refuses to
// re-execute a Go function it does not have, naming the host, with the workspace untouched.
func TestEmbeddedGoDecisionsAreUndoneFromTheCLI(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trees := hostRuns(t, dir, []struct {
		id string
		fn plan.Func
	}{
		{"first", func(_ context.Context, dir string, _ plan.DecisionCall) error {
			if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("package a\n"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
		}},
		{"second", func(_ context.Context, dir string, d plan.DecisionCall) error {
			_, _ = d.Log.Write([]byte("rewriting the tree\n"))
			if err := os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("package a // changed\n"), 0o644); err != nil {
				return err
			}
			if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o644); err != nil {
				return err
			}
			if err := os.Remove(filepath.Join(dir, "keep.txt")); err != nil {
				return err
			}
			if err := os.Symlink("src/a.go", filepath.Join(dir, "link")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "src", "b.go"), []byte(strings.Repeat("b", 70000)), 0o600)
		}},
	})
	afterFirst := trees[0]

	// The CLI sees the host's operations in its history.
	r := runPlan(t, dir, nil, "history", "--json")
	var hist []struct {
		Kind string   `json:"kind"`
		Args []string `json:"args"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hist) != nil || len(hist) != 4 ||
		hist[0].Kind != "decision" || hist[0].Args[0] != "second" || hist[1].Kind != "exec" || hist[2].Kind != "decision" {
		t.Fatalf("history: %s", r)
	}

	// The CLI cannot re-execute a Go function: it says which program can, and changes nothing.
	r = runPlan(t, dir, nil, "correct", "--decision", "second", "--reason", "wrong", "--yes")
	if r.code != 5 || !strings.Contains(r.stderr, `Go function "second" of the host program hostile-host`) {
		t.Fatalf("correct from the CLI: %s", r)
	}
	treetest.RequireSame(t, dir, nil, trees[1], "after the refused correction")

	r = runPlan(t, dir, nil, "undo", "--yes", "--json")
	var undo struct {
		Undone struct {
			Kind string   `json:"kind"`
			Args []string `json:"args"`
		} `json:"undone"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &undo) != nil || undo.Undone.Kind != "decision" ||
		len(undo.Undone.Args) != 1 || undo.Undone.Args[0] != "second" {
		t.Fatalf("undo: %s", r)
	}
	treetest.RequireSame(t, dir, nil, afterFirst, "after plan undo of the second Go decision")

	r = runPlan(t, dir, nil, "status", "--json")
	var st struct {
		Decisions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"decisions"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || len(st.Decisions) != 2 ||
		st.Decisions[0].Status != "succeeded" || st.Decisions[1].Status != "reverted" {
		t.Fatalf("status after undo: %s", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink the second decision made survived the undo: %v", err)
	}
}

// A Go decision that panics half-way does not take the host down and loses nothing: its attempt
// is failed with what it changed recorded, `plan log` shows the panic, and `plan undo` from the CLI
// puts the workspace back as it was before it, byte for byte.
func TestAPanickingGoDecisionIsRecordedAndUndone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := treetest.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := plan.Open(ctx, plan.Config{Root: dir, Init: true, Host: "hostile-host", Getenv: testkit.Getenv(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Services.Plans.Exec(ctx, plan.ExecRequest{ID: "half", Func: plan.Func(func(_ context.Context, dir string, _ plan.DecisionCall) error {
		if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("half-written"), 0o600); err != nil {
			return err
		}
		panic("the host's bug")
	})})
	var failed *application.DecisionFailedError
	if !errors.As(err, &failed) || failed.ExitCode == nil || *failed.ExitCode != 2 {
		t.Fatalf("exec: %v", err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	r := runPlan(t, dir, nil, "log", "half")
	if r.code != 0 || !strings.Contains(r.stdout, "panic: the host's bug") {
		t.Fatalf("log: %s", r)
	}
	r = runPlan(t, dir, nil, "undo", "--yes")
	if r.code != 0 {
		t.Fatalf("undo: %s", r)
	}
	treetest.RequireSame(t, dir, nil, before, "after plan undo of the panicked Go decision")
}
