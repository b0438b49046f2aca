package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// `plan mcp`, the real binary over stdio, driven by the MCP Go SDK's client: what an agent's
// destructive tool call does to the workspace, byte for byte, and what a kill -9 in the middle of
// one leaves.

var mcpSkipState = map[string]bool{".plan": true}

// mcpServe starts `plan mcp` in the workspace and connects the SDK's client to it.
func mcpServe(t *testing.T, w *workspace, env ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(planBinary(t), "mcp")
	cmd.Dir, cmd.Env = w.dir, append(append(baseEnv(), w.env...), env...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to plan mcp: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

// mcpCall calls a tool; ok says whether it must succeed. It returns the structured output (on
// success) or plan's error document (on failure), decoded.
func mcpCall(t *testing.T, cs *mcp.ClientSession, ok bool, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, isText := c.(*mcp.TextContent); isText {
			texts = append(texts, tc.Text)
		}
	}
	if res.IsError == ok {
		t.Fatalf("%s %v: isError %v, want %v: %q", name, args, res.IsError, !ok, texts)
	}
	var doc map[string]any
	raw := []byte(texts[len(texts)-1])
	if ok {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v in %q", name, err, texts)
	}
	return doc
}

func mcpErrorKind(doc map[string]any) string {
	e, _ := doc["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

func mcpTree(t *testing.T, dir string) []tree.Entry {
	t.Helper()
	entries, err := treetest.Read(dir, mcpSkipState)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// Every tool through the real binary; a restore and its undo leave the exact trees; bad calls
// change nothing and carry plan's kinds.
func TestMCPBinaryToolsAndRestoreAreExact(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a.txt", "one\n")
	w.write("src/b.txt", "bee\n")
	if err := os.Symlink("a.txt", w.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path("run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs, _ := mcpServe(t, w)
	base := mcpCall(t, cs, true, "checkpoint", map[string]any{"note": "base", "labels": map[string]string{"agent": "hostile"}})["id"].(string)
	saved := mcpTree(t, w.dir)

	w.write("a.txt", "edited\n")
	if err := os.RemoveAll(w.path("src")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w.path("run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.write("junk/x.txt", "x\n")
	changed := mcpTree(t, w.dir)

	list := mcpCall(t, cs, true, "list", map[string]any{"limit": 5})
	if n := len(list["checkpoints"].([]any)); n != 1 {
		t.Fatalf("list: %v", list)
	}
	diff := mcpCall(t, cs, true, "diff", map[string]any{"from": base, "stat": true})
	if n := len(diff["changes"].([]any)); n < 4 {
		t.Fatalf("diff: %v", diff)
	}
	st := mcpCall(t, cs, true, "status", nil)
	if ws := st["workspace"].(map[string]any); ws["latest_checkpoint"] != base {
		t.Fatalf("status: %v", st)
	}

	dry := mcpCall(t, cs, true, "restore", map[string]any{"checkpoint": base, "dry_run": true})
	if dry["dry_run"] != true {
		t.Fatalf("dry run: %v", dry)
	}
	treetest.RequireSame(t, w.dir, mcpSkipState, changed, "after a dry-run restore")
	mcpCall(t, cs, true, "restore", map[string]any{"checkpoint": base})
	treetest.RequireSame(t, w.dir, mcpSkipState, saved, "after restore through plan mcp")
	mcpCall(t, cs, true, "undo", nil)
	treetest.RequireSame(t, w.dir, mcpSkipState, changed, "after undo through plan mcp")
	mcpCall(t, cs, true, "restore", map[string]any{"checkpoint": base, "paths": []string{"src"}})
	if w.read("src/b.txt") != "bee\n" || w.read("a.txt") != "edited\n" {
		t.Fatal("a per-path restore did more or less than its path")
	}

	w.must("exec", "--id", "mk", "--", "sh", "-c", "echo made > made.txt")
	mcpCall(t, cs, true, "revert", map[string]any{"decision": "mk", "reason": "hostile"})
	if _, err := os.Lstat(w.path("made.txt")); !os.IsNotExist(err) {
		t.Fatalf("revert left made.txt: %v", err)
	}

	before := mcpTree(t, w.dir)
	for _, c := range []struct {
		tool string
		args map[string]any
		kind string
	}{
		{"restore", map[string]any{"checkpoint": "no-such-name"}, "not_found"},
		{"restore", map[string]any{"checkpoint": base, "paths": []string{"../escape"}}, "invalid"},
		{"restore", map[string]any{"checkpoint": base, "mode": "all"}, "usage"},
		{"restore", map[string]any{"checkpoint": base, "unknown": true}, "usage"},
		{"revert", map[string]any{"decision": "nope", "reason": "x"}, "not_found"},
		{"list", map[string]any{"limit": -3}, "invalid"},
		{"checkpoint", map[string]any{"labels": map[string]string{"BAD": "x"}}, "invalid"},
	} {
		if k := mcpErrorKind(mcpCall(t, cs, false, c.tool, c.args)); k != c.kind {
			t.Errorf("%s %v: kind %q, want %q", c.tool, c.args, k, c.kind)
		}
	}
	treetest.RequireSame(t, w.dir, mcpSkipState, before, "after the refused calls")
}

// An agent's restore killed at any moment (kill -9 of plan mcp mid-call) leaves the workspace as
// it was or as the checkpoint holds it, once the next command has recovered: never a mix.
func TestMCPBinaryRestoreKilledMidCallIsWholeAfterRecovery(t *testing.T) {
	w := newWorkspace(t, nil)
	const files = 400
	for i := range files {
		w.write(fmt.Sprintf("d%02d/f%03d.txt", i%20, i), strings.Repeat(fmt.Sprintf("base %d\n", i), 200))
	}
	base := w.checkpoint("base")
	want := mcpTree(t, w.dir)
	for trial, delay := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 80 * time.Millisecond} {
		for i := range files {
			w.write(fmt.Sprintf("d%02d/f%03d.txt", i%20, i), fmt.Sprintf("trial %d changed %d\n", trial, i))
		}
		w.write(fmt.Sprintf("extra%d.txt", trial), "extra\n")
		changed := mcpTree(t, w.dir)

		cs, cmd := mcpServe(t, w)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "restore", Arguments: map[string]any{"checkpoint": base}})
		}()
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		_ = cs.Close()

		w.must("recover")
		got := mcpTree(t, w.dir)
		if len(treetest.Diff(want, got)) > 0 && len(treetest.Diff(changed, got)) > 0 {
			t.Fatalf("trial %d (kill after %s): the workspace is neither the checkpoint nor as it was:\n%s",
				trial, delay, treetest.Summary(treetest.Diff(want, got)))
		}
		// Back to the changed state for the next trial's starting point, whatever this one left.
		w.must("rollback", "--to-checkpoint", base, "--yes")
	}
}

// mcpHook sends a documented Claude Code payload (interfaces/agenthooks/testdata) to `plan hook`.
func mcpHook(t *testing.T, w *workspace, event, fixture string) {
	t.Helper()
	b, err := os.ReadFile("../../interfaces/agenthooks/testdata/claude-" + fixture + ".json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := command(t, "", w.env, strings.ReplaceAll(string(b), "$CWD", w.dir), "hook", "claude", event)
	cmd.Dir = w.dir
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("plan hook claude %s: %v %s", event, err, out)
	}
}

// An agent's session recorded by the hooks, listed and rewound to before its rm -rf through the
// real binary's MCP tools: byte for byte, and undone byte for byte.
func TestMCPBinarySessionRewindIsExact(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("build/a.o", "object")
	w.write("main.go", "package main\n")
	mcpHook(t, w, "UserPromptSubmit", "UserPromptSubmit")
	mcpHook(t, w, "PreToolUse", "PreToolUse-Write")
	w.write("README.md", "# Project\n")
	mcpHook(t, w, "PostToolUse", "PostToolUse-Write")
	mcpHook(t, w, "PreToolUse", "PreToolUse-Bash")
	beforeRm := mcpTree(t, w.dir)
	if err := os.RemoveAll(w.path("build")); err != nil {
		t.Fatal(err)
	}
	mcpHook(t, w, "PostToolUse", "PostToolUse-Bash")
	mcpHook(t, w, "Stop", "Stop")
	afterRm := mcpTree(t, w.dir)

	cs, _ := mcpServe(t, w)
	const session = "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"
	ss := mcpCall(t, cs, true, "sessions", nil)["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["plan"] != session {
		t.Fatalf("sessions: %v", ss)
	}
	mcpCall(t, cs, true, "rewind", map[string]any{"session": session, "tool_call": "toolu_01Q2pZr8VbN5mKc3tYxE7wJd"})
	treetest.RequireSame(t, w.dir, mcpSkipState, beforeRm, "after rewinding to before the rm")
	mcpCall(t, cs, true, "undo", nil)
	treetest.RequireSame(t, w.dir, mcpSkipState, afterRm, "after undoing the rewind")
	if k := mcpErrorKind(mcpCall(t, cs, false, "rewind", map[string]any{"session": session, "turn": 5})); k != "not_found" {
		t.Fatalf("rewind to a turn that is not there: %s", k)
	}
	treetest.RequireSame(t, w.dir, mcpSkipState, afterRm, "after a refused rewind")
}

// plan mcp killed (SIGKILL, by a failpoint) at each step of a restore it runs for an agent: the
// next command finishes the rollback from its journal, and the workspace is the checkpoint, byte
// for byte, as after a command-line rollback killed there.
func TestMCPBinaryRestoreKilledAtEachStepIsFinishedByRecover(t *testing.T) {
	for _, fp := range []string{"restore.staged", "restore.removed", "restore.write", "restore.applied", "rollback.applied", "rollback.recorded"} {
		t.Run(fp, func(t *testing.T) {
			w := newWorkspace(t, nil)
			for i := range 50 {
				w.write(fmt.Sprintf("d%d/f%02d.txt", i%5, i), fmt.Sprintf("base %d\n", i))
			}
			base := w.checkpoint("base")
			want := mcpTree(t, w.dir)
			for i := range 50 {
				w.write(fmt.Sprintf("d%d/f%02d.txt", i%5, i), "changed\n")
			}
			w.write("new/x.txt", "new\n")

			cs, cmd := mcpServe(t, w, "PLAN_FAILPOINT="+fp)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "restore", Arguments: map[string]any{"checkpoint": base}})
			if err == nil {
				t.Fatalf("the restore answered (%+v): the failpoint did not kill plan mcp", res)
			}
			_ = cs.Close()
			if cmd.ProcessState == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("plan mcp was not killed: %v", cmd.ProcessState)
			}
			var rec struct {
				Recovered bool   `json:"recovered"`
				Outcome   string `json:"outcome"`
			}
			w.mustJSON(&rec, "recover")
			if !rec.Recovered || rec.Outcome != "completed" {
				t.Fatalf("recover: %+v", rec)
			}
			treetest.RequireSame(t, w.dir, mcpSkipState, want, "after recovering the killed restore")
		})
	}
}
