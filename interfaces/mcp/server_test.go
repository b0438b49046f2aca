package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/cli"
	"github.com/planhq/plan/interfaces/view"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// mcpClient connects the SDK's client to a server on dir, in-process.
func mcpClient(t *testing.T, dir string) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	srv, _ := newMCPServer(&cli.Runner{Version: "test"}, dir)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "plan-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// mcpOK calls a tool that must succeed and decodes its structured output into out; it returns the
// text content.
func mcpOK(t *testing.T, cs *sdk.ClientSession, name string, args, out any) []string {
	t.Helper()
	res := callTool(t, cs, name, args)
	texts := contentTexts(res)
	if res.IsError {
		t.Fatalf("%s %v: %v", name, args, texts)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	requireOutputSchema(t, cs, name, b)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	if len(texts) == 0 || !json.Valid([]byte(texts[0])) {
		t.Fatalf("%s: the first content is not the JSON output: %v", name, texts)
	}
	return texts
}

// requireOutputSchema checks a tool's structured output against the output schema it lists, as
// clients do (the TypeScript SDK's among them).
func requireOutputSchema(t *testing.T, cs *sdk.ClientSession, name string, out []byte) {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(x *sdk.Tool) bool { return x.Name == name })
	raw, _ := json.Marshal(tools.Tools[i].OutputSchema)
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(doc); err != nil {
		t.Fatalf("%s: the output does not match its schema: %v\n%s", name, err, out)
	}
}

// mcpFails calls a tool that must fail and returns plan's error document from it.
func mcpFails(t *testing.T, cs *sdk.ClientSession, name string, args any, kind string, code int) view.Error {
	t.Helper()
	res := callTool(t, cs, name, args)
	texts := contentTexts(res)
	if !res.IsError {
		t.Fatalf("%s %v succeeded: %v", name, args, texts)
	}
	var v view.Error
	if len(texts) != 2 || res.StructuredContent != nil {
		t.Fatalf("%s: an error result is two texts and no structured content: %v %v", name, texts, res.StructuredContent)
	}
	if err := json.Unmarshal([]byte(texts[1]), &v); err != nil {
		t.Fatalf("%s: error document %s: %v", name, texts[1], err)
	}
	if v.Error.Kind != kind || v.Code != code || v.Error.Message == "" {
		t.Fatalf("%s %v: got %+v, want kind %s code %d", name, args, v, kind, code)
	}
	if !strings.Contains(texts[0], v.Error.Message) || !strings.Contains(texts[0], "kind "+kind) {
		t.Fatalf("%s: text content %v does not carry the error", name, texts)
	}
	return v
}

func contentTexts(res *sdk.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func TestMCPToolsAreDescribed(t *testing.T) {
	cs := mcpClient(t, newWorkspace(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]bool{ // readOnly, destructive, idempotent
		"checkpoint": {false, false, false}, "list": {true, false, true}, "diff": {true, false, true},
		"restore": {false, true, false}, "revert": {false, true, false}, "undo": {false, true, false},
		"status": {true, false, true}, "sessions": {true, false, true}, "rewind": {false, true, false},
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w[0] || a.DestructiveHint == nil || *a.DestructiveHint != w[1] ||
			a.IdempotentHint != w[2] || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v, want readOnly/destructive/idempotent %v, closed world", tool.Name, a, w)
		}
		if tool.Description == "" || tool.Title == "" {
			t.Errorf("%s: no title or description", tool.Name)
		}
		for what, s := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			m, ok := s.(map[string]any)
			if !ok || m["type"] != "object" {
				t.Errorf("%s: %s schema %v is not an object schema", tool.Name, what, s)
			}
			if what == "input" && m["additionalProperties"] != false {
				t.Errorf("%s: the input schema accepts unknown properties: %v", tool.Name, m)
			}
		}
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "checkpoint diff list restore revert rewind sessions status undo" {
		t.Fatalf("tools %v", names)
	}
	restore := res.Tools[slices.IndexFunc(res.Tools, func(x *sdk.Tool) bool { return x.Name == "restore" })]
	mode := restore.InputSchema.(map[string]any)["properties"].(map[string]any)["mode"].(map[string]any)
	if got, _ := json.Marshal(mode["enum"]); string(got) != `["both","files","state"]` || mode["default"] != "both" {
		t.Fatalf("restore's mode: %v", mode)
	}
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "plan" || !strings.Contains(init.Instructions, "checkpoint") {
		t.Fatalf("server info %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
}

func TestMCPCheckpointAndList(t *testing.T) {
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	writeFile(t, dir, "a.txt", "one\n")
	var first, second view.Checkpoint
	mcpOK(t, cs, "checkpoint", map[string]any{"note": "-before the edit", "labels": map[string]string{"agent": "claude", "turn": "1"}}, &first)
	if first.Note != "-before the edit" || first.Labels["agent"] != "claude" || first.Labels["turn"] != "1" || first.Files != 1 || first.ShortID == "" {
		t.Fatalf("checkpoint: %+v", first)
	}
	writeFile(t, dir, "a.txt", "two\n")
	mcpOK(t, cs, "checkpoint", nil, &second)

	var all, newest, tagged mcpListOut
	mcpOK(t, cs, "list", map[string]any{}, &all)
	if len(all.Checkpoints) != 2 || all.Checkpoints[0].ID != second.ID || all.Checkpoints[1].ID != first.ID {
		t.Fatalf("list: %+v", all)
	}
	mcpOK(t, cs, "list", map[string]any{"limit": 1}, &newest)
	if len(newest.Checkpoints) != 1 || newest.Checkpoints[0].ID != second.ID {
		t.Fatalf("list limit 1: %+v", newest)
	}
	mcpOK(t, cs, "list", map[string]any{"labels": map[string]string{"agent": "claude"}}, &tagged)
	if len(tagged.Checkpoints) != 1 || tagged.Checkpoints[0].ID != first.ID {
		t.Fatalf("list by label: %+v", tagged)
	}
	var none mcpListOut
	mcpOK(t, cs, "list", map[string]any{"labels": map[string]string{"agent": "codex"}}, &none)
	if none.Checkpoints == nil || len(none.Checkpoints) != 0 {
		t.Fatalf("list matching nothing: %+v", none)
	}

	// Bad input: refused with plan's kind, and no checkpoint taken.
	mcpFails(t, cs, "checkpoint", map[string]any{"labels": map[string]string{"Bad Key": "x"}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "checkpoint", map[string]any{"labels": map[string]string{"a=b": "c"}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "checkpoint", map[string]any{"labels": map[string]string{"ok": "bad\x01value"}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "list", map[string]any{"labels": map[string]string{"Bad": "x"}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "list", map[string]any{"limit": -1}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "list", map[string]any{"limit": "3"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "list", map[string]any{"limit": 1e30}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "checkpoint", map[string]any{"nope": true}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "checkpoint", map[string]any{"note": 3}, "usage", cli.ExitUsage)
	mcpOK(t, cs, "list", nil, &all)
	if len(all.Checkpoints) != 2 {
		t.Fatalf("a refused call took a checkpoint: %+v", all)
	}
	// The CLI's operation log has both checkpoints, as the CLI logs them.
	ops := historyOf(t, dir)
	if len(ops) != 3 || ops[0].Kind != "checkpoint" || ops[1].Kind != "checkpoint" {
		t.Fatalf("history: %+v", ops)
	}
}

func TestMCPDiff(t *testing.T) {
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "keep.txt", "same\n")
	from := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	writeFile(t, dir, "b.txt", "new\n")
	to := createCheckpoint(t, dir)
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}

	var v view.Diff
	mcpOK(t, cs, "diff", map[string]any{"from": from, "to": to}, &v)
	if v.From != from || v.To == nil || *v.To != to || len(v.Changes) != 2 || v.Stat != nil || v.Changes[0].Patch != "" {
		t.Fatalf("diff: %+v", v)
	}
	texts := mcpOK(t, cs, "diff", map[string]any{"from": from, "to": to, "name_only": true}, &v)
	if len(texts) != 2 || texts[1] != "a.txt\nb.txt" {
		t.Fatalf("name_only text: %q", texts)
	}
	mcpOK(t, cs, "diff", map[string]any{"from": from, "to": to, "stat": true, "patch": true}, &v)
	if v.Stat == nil || v.Stat.Insertions != 2 || v.Stat.Deletions != 0 || !strings.Contains(v.Changes[0].Patch, "+two") {
		t.Fatalf("stat and patch: %+v", v)
	}
	// Against the live workspace, by name.
	mcpOK(t, cs, "diff", map[string]any{"from": "@"}, &v)
	if v.To != nil || len(v.Changes) != 1 || v.Changes[0].Path != "b.txt" || v.Changes[0].Change != "deleted" {
		t.Fatalf("diff @: %+v", v)
	}
	mcpOK(t, cs, "diff", map[string]any{"from": "@~1", "to": "@"}, &v)
	if v.From != from || len(v.Changes) != 2 {
		t.Fatalf("diff @~1 @: %+v", v)
	}

	mcpFails(t, cs, "diff", map[string]any{"from": from, "name_only": true, "stat": true}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "diff", map[string]any{}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "diff", map[string]any{"from": "ffffffffffff"}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "diff", map[string]any{"from": "--patch"}, "invalid", cli.ExitInvalid)
}

func TestMCPRestore(t *testing.T) {
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "src/b.txt", "bee\n")
	base := createCheckpoint(t, dir)
	saved, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "edited\n")
	if err := os.RemoveAll(filepath.Join(dir, "src")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "junk.txt", "junk\n")

	// A dry run changes nothing and says what would change.
	var v view.Rollback
	mcpOK(t, cs, "restore", map[string]any{"checkpoint": base, "dry_run": true}, &v)
	if !v.DryRun || v.Added != 1 || v.Modified != 1 || v.Deleted != 1 || readFile(t, dir, "a.txt") != "edited\n" {
		t.Fatalf("dry run: %+v", v)
	}
	// Only the paths given.
	mcpOK(t, cs, "restore", map[string]any{"checkpoint": base, "paths": []string{"src"}}, &v)
	if readFile(t, dir, "src/b.txt") != "bee\n" || readFile(t, dir, "a.txt") != "edited\n" || v.BackupCheckpointID == nil ||
		!slices.Equal(v.Paths, []string{"src"}) {
		t.Fatalf("per-path restore: %+v", v)
	}
	// The whole workspace, byte for byte; undone by undo.
	mcpOK(t, cs, "restore", map[string]any{"at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, &v)
	if v.CheckpointID == base {
		t.Fatalf("--at a later time picked %s, not the newest (the per-path restore's safety checkpoint)", v.CheckpointID)
	}
	mcpOK(t, cs, "restore", map[string]any{"checkpoint": base, "mode": "files"}, &v)
	requireTree(t, dir, saved, "after restoring the whole workspace")

	mcpFails(t, cs, "restore", map[string]any{}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": base, "at": "2h"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": base, "mode": "all"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": "nothing-by-that-name"}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": base, "paths": []string{"../outside"}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": base, "paths": []string{""}}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "restore", map[string]any{"at": "not a time"}, "invalid", cli.ExitInvalid)
	requireTree(t, dir, saved, "after the refused restores")
}

func TestMCPRevertUndoStatus(t *testing.T) {
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	var st view.WorkspaceStatus
	mcpOK(t, cs, "status", nil, &st)
	if st.Plan != nil || st.Workspace.LatestCheckpoint != nil || st.Workspace.Root == "" {
		t.Fatalf("status of a new workspace: %+v", st)
	}
	mcpFails(t, cs, "undo", nil, "not_found", cli.ExitNotFound)

	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	mustPlan(t, dir, "exec", "--id", "two", "--", "sh", "-c", "echo 2 > two.txt")
	mcpOK(t, cs, "status", map[string]any{}, &st)
	if st.Plan == nil || len(st.Decisions) != 2 || st.Workspace.LatestCheckpoint == nil {
		t.Fatalf("status: %+v", st)
	}
	mcpOK(t, cs, "status", map[string]any{"plan": st.Plan.Name}, &st)
	mcpFails(t, cs, "status", map[string]any{"plan": "no-such-plan"}, "not_found", cli.ExitNotFound)

	var rv view.Revert
	mcpOK(t, cs, "revert", map[string]any{"decision": "one", "reason": "r", "dry_run": true}, &rv)
	if !rv.DryRun || readFile(t, dir, "one.txt") != "1\n" {
		t.Fatalf("revert dry run: %+v", rv)
	}
	mcpOK(t, cs, "revert", map[string]any{"decision": "one", "reason": "wrong file", "plan": st.Plan.Name, "conflicts": "refuse"}, &rv)
	if _, err := os.Stat(filepath.Join(dir, "one.txt")); !os.IsNotExist(err) || readFile(t, dir, "two.txt") != "2\n" ||
		rv.Reason != "wrong file" || rv.SafetyCheckpointID == nil {
		t.Fatalf("revert: %+v (%v)", rv, err)
	}
	mcpFails(t, cs, "revert", map[string]any{}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "revert", map[string]any{"decision": "two"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "revert", map[string]any{"decision": "", "reason": "r"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "revert", map[string]any{"decision": "two", "reason": ""}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "revert", map[string]any{"decision": "three", "reason": "r"}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "revert", map[string]any{"decision": "two", "reason": "r", "conflicts": "ours"}, "usage", cli.ExitUsage)

	var uv view.Undo
	mcpOK(t, cs, "undo", map[string]any{"dry_run": true}, &uv)
	if !uv.DryRun || uv.Undone.Kind != "revert" || uv.Operation != nil {
		t.Fatalf("undo dry run: %+v", uv)
	}
	if _, err := os.Stat(filepath.Join(dir, "one.txt")); !os.IsNotExist(err) {
		t.Fatal("the undo dry run changed the workspace")
	}
	mcpOK(t, cs, "undo", map[string]any{}, &uv)
	if uv.DryRun || uv.Operation == nil || readFile(t, dir, "one.txt") != "1\n" || readFile(t, dir, "two.txt") != "2\n" {
		t.Fatalf("undo: %+v", uv)
	}
	mcpFails(t, cs, "undo", map[string]any{"dry_run": "yes"}, "usage", cli.ExitUsage)
}

// A tool call sees the workspace busy as the CLI does: the same lock.
func TestMCPSharesTheWorkspaceLock(t *testing.T) {
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	writeFile(t, dir, "a.txt", "one\n")
	base := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "two\n")
	release := holdWorkspaceLock(t, dir)
	mcpFails(t, cs, "restore", map[string]any{"checkpoint": base}, "conflict", cli.ExitConflict)
	if readFile(t, dir, "a.txt") != "two\n" {
		t.Fatal("a restore refused for a busy workspace changed it")
	}
	release()
	var v view.Rollback
	mcpOK(t, cs, "restore", map[string]any{"checkpoint": base}, &v)
	if readFile(t, dir, "a.txt") != "one\n" {
		t.Fatal("restore after the lock was released")
	}
}

// call turns a command that fails without an error document, and output that is not the JSON
// expected, into failures.
func TestMCPCallFailures(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "two\n")
	tools := newMCPTools(&cli.Runner{}, dir)
	var v view.Diff
	_, err := tools.call(context.Background(), &v, "diff", "--exit-code", "@")
	var f *mcpFailure
	if !asFailure(err, &f) || f.view.Error.Kind != "internal" || f.view.Code != cli.ExitInternal || !strings.Contains(f.Error(), "exited 1") {
		t.Fatalf("silent exit 1: %v", err)
	}
	var n int
	if _, err := tools.call(context.Background(), &n, "status"); err == nil || !strings.Contains(err.Error(), "no JSON document") {
		t.Fatalf("output of the wrong shape: %v", err)
	}
	res := failureResult(io.ErrUnexpectedEOF)
	if !res.IsError || !strings.Contains(contentTexts(res)[0], "kind internal, exit code 1") {
		t.Fatalf("a plain error: %+v", res)
	}
	cs := mcpClient(t, dir)
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "status", Arguments: json.RawMessage(`[1]`)})
	if err != nil || !res.IsError || !strings.Contains(contentTexts(res)[0], "not a JSON object") {
		t.Fatalf("arguments that are not an object: %v %v", res, err)
	}
}

func holdWorkspaceLock(t *testing.T, dir string) func() {
	t.Helper()
	unlock := bootstrap.TestLock(t, dir)
	return func() {
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

func asFailure(err error, f **mcpFailure) bool {
	x, ok := err.(*mcpFailure)
	*f = x
	return ok
}

// plan mcp itself: over stdin and stdout, in the workspace it starts in; refused outside one.
func TestMCPCommand(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "sub/a.txt", "one\n")
	base := createCheckpoint(t, dir)
	writeFile(t, dir, "sub/a.txt", "two\n")

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan outcome, 1)
	go func() {
		var errOut strings.Builder
		r := cli.Runner{Stdin: inR, Stdout: outW, Stderr: &errOut, Dir: filepath.Join(dir, "sub"), Version: "test", MCP: Serve}
		code := r.Run(context.Background(), []string{"plan", "mcp"})
		_ = outW.Close()
		done <- outcome{args: []string{"mcp"}, code: code, stderr: errOut.String()}
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "plan-test", Version: "v0"}, nil).
		Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v view.Rollback
	// Started in a subdirectory: the workspace above is found, and paths are the workspace root's.
	mcpOK(t, cs, "restore", map[string]any{"checkpoint": base, "paths": []string{"sub/a.txt"}}, &v)
	if readFile(t, dir, "sub/a.txt") != "one\n" {
		t.Fatal("restore through plan mcp did not restore")
	}
	_ = cs.Close()
	o := <-done
	if o.code != cli.ExitOK || o.stderr != "" {
		t.Fatalf("plan mcp after its client left: %v", o)
	}

	outside := t.TempDir()
	o = inWorkspace(outside, "--json", "mcp")
	if o.code != cli.ExitNotFound || !strings.Contains(o.stderr, "plan init") {
		t.Fatalf("plan mcp outside a workspace: %v", o)
	}
	if o := inWorkspace(dir, "mcp", "extra"); o.code != cli.ExitUsage {
		t.Fatalf("plan mcp extra: %v", o)
	}
}

// What plan says on stderr besides its output (a warning) follows the JSON output as text.
func TestMCPWarningsFollowTheOutput(t *testing.T) {
	dir := newWorkspace(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	var v view.Checkpoint
	texts := mcpOK(t, mcpClient(t, dir), "checkpoint", map[string]any{"note": "with a fifo"}, &v)
	if len(texts) != 2 || !strings.Contains(texts[1], "warning") || !strings.Contains(texts[1], "pipe") {
		t.Fatalf("texts: %q", texts)
	}
}

// Absent or null arguments are an empty object; a schema that cannot be built is a programming
// error found when the server starts.
func TestMCPInputEdges(t *testing.T) {
	s := mustSchema[mcpUndoIn]()
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"", "null"} {
		in, err := decodeInput[mcpUndoIn](resolved, json.RawMessage(raw))
		if err != nil || in.DryRun {
			t.Fatalf("%q: %+v %v", raw, in, err)
		}
	}
	mustPanic(t, "schema of chan int", func() { mustSchema[chan int]() })
	bare := sdk.NewServer(&sdk.Implementation{Name: "x"}, nil)
	mustPanic(t, "input schema", func() {
		addMCPTool(bare, &sdk.Tool{Name: "bad"}, func(s *jsonschema.Schema) { s.Properties["dry_run"].Pattern = "(" },
			func(context.Context, mcpUndoIn) (view.Undo, []string, error) { return view.Undo{}, nil, nil })
	})
}

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Fatalf("panic %v, want one saying %q", r, want)
		}
	}()
	fn()
}

// Cancelled (the process signalled), plan mcp ends as an interrupted command.
func TestMCPCommandInterrupted(t *testing.T) {
	dir := newWorkspace(t)
	inR, inW := io.Pipe()
	defer func() { _ = inW.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		r := cli.Runner{Stdin: inR, Stdout: io.Discard, Stderr: &errOut, Dir: dir, MCP: Serve}
		done <- r.Run(ctx, []string{"plan", "mcp"})
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	if code := <-done; code != cli.ExitInterrupted {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// checkMCPOutputs checks each tool's structured output, and a tool error's document, against the
// schemas of docs/schema: the same as the commands' --json output (list's in an object).
func checkMCPOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := newWorkspace(t)
	cs := mcpClient(t, dir)
	out := func(tool string, args map[string]any) string {
		t.Helper()
		res := callTool(t, cs, tool, args)
		if res.IsError {
			t.Fatalf("%s: %v", tool, contentTexts(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	writeFile(t, dir, "a.txt", "one\n")
	check("checkpoint", out("checkpoint", map[string]any{"note": "n", "labels": map[string]string{"k": "v"}}))
	writeFile(t, dir, "a.txt", "two\n")
	check("mcp-list", out("list", map[string]any{"limit": 1}))
	check("diff", out("diff", map[string]any{"from": "@", "stat": true, "patch": true}))
	check("status", out("status", nil))
	check("rollback", out("restore", map[string]any{"checkpoint": "@"}))
	check("undo", out("undo", nil))
	mustPlan(t, dir, "exec", "--id", "d", "--", "sh", "-c", "echo d > d.txt")
	check("revert", out("revert", map[string]any{"decision": "d", "reason": "r"}))
	res := callTool(t, cs, "restore", map[string]any{"checkpoint": "nothing"})
	check("error", contentTexts(res)[1])
	agents := mcpClient(t, claudeTurn(t))
	out = func(tool string, args map[string]any) string {
		t.Helper()
		res := callTool(t, agents, tool, args)
		if res.IsError {
			t.Fatalf("%s: %v", tool, contentTexts(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	check("sessions", out("sessions", nil))
	check("rewind", out("rewind", map[string]any{"session": claudeSession, "turn": 1}))
}

// An agent session recorded by plan's hooks, listed and rewound through MCP: byte for byte, and
// undone by the undo tool.
func TestMCPSessionsAndRewind(t *testing.T) {
	dir := claudeTurn(t)
	cs := mcpClient(t, dir)
	var all, one view.Sessions
	mcpOK(t, cs, "sessions", nil, &all)
	if len(all.Sessions) != 1 || all.Sessions[0].Plan != claudeSession || len(all.Sessions[0].Turns[0].ToolCalls) != 2 {
		t.Fatalf("sessions: %+v", all)
	}
	mcpOK(t, cs, "sessions", map[string]any{"session": "7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"}, &one)
	if len(one.Sessions) != 1 || one.Sessions[0].Plan != claudeSession {
		t.Fatalf("sessions by ID: %+v", one)
	}
	after, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}

	bash := "toolu_01Q2pZr8VbN5mKc3tYxE7wJd"
	var rv view.Rewind
	mcpOK(t, cs, "rewind", map[string]any{"session": claudeSession, "tool_call": bash, "dry_run": true}, &rv)
	if !rv.DryRun || rv.Added != 1 || rv.ToolCall == nil || *rv.ToolCall != bash {
		t.Fatalf("rewind dry run: %+v", rv)
	}
	requireTree(t, dir, after, "after a dry-run rewind")
	mcpOK(t, cs, "rewind", map[string]any{"session": claudeSession, "tool_call": bash}, &rv)
	if readFile(t, dir, "build/a.o") != "object" || readFile(t, dir, "README.md") != "# Project\n" || rv.Session != claudeSession {
		t.Fatalf("rewind to before the rm: %+v", rv)
	}
	var uv view.Undo
	mcpOK(t, cs, "undo", nil, &uv)
	requireTree(t, dir, after, "after undoing the rewind")

	mcpOK(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "mode": "files", "paths": []string{"README.md"}}, &rv)
	if _, err := os.Stat(filepath.Join(dir, "README.md")); !os.IsNotExist(err) || rv.Turn == nil || *rv.Turn != 1 || rv.Mode != "files" {
		t.Fatalf("per-path rewind of turn 1: %+v (%v)", rv, err)
	}
	mcpOK(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "mode": "state"}, &rv)
	if rv.Mode != "state" {
		t.Fatalf("state rewind: %+v", rv)
	}
	mcpOK(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "mode": "both"}, &rv)

	mcpFails(t, cs, "sessions", map[string]any{"session": "nope"}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "rewind", map[string]any{"turn": 1}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "rewind", map[string]any{"session": ""}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "tool_call": bash}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 0}, "invalid", cli.ExitInvalid)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 7}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "tool_call": "toolu_nope"}, "not_found", cli.ExitNotFound)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "mode": "some"}, "usage", cli.ExitUsage)
	mcpFails(t, cs, "rewind", map[string]any{"session": claudeSession, "turn": 1, "paths": []string{"../x"}}, "invalid", cli.ExitInvalid)
}

// A client that sends a restore and leaves at once: plan mcp ends only once the restore has ended,
// so nothing is left half-done (no operation pending) and the workspace is one state or the other.
func TestMCPClientLeavingMidCallLeavesNothingHalfDone(t *testing.T) {
	dir := newWorkspace(t)
	for i := range 300 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%d.txt", i%10, i), strings.Repeat("base\n", 100))
	}
	base := createCheckpoint(t, dir)
	saved, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%d.txt", i%10, i), "changed\n")
	}
	changed, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"restore","arguments":{"checkpoint":"` + base + `"}}}`,
	}, "\n") + "\n"
	var out, errOut strings.Builder
	r := cli.Runner{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errOut, Dir: dir, MCP: Serve}
	if code := r.Run(context.Background(), []string{"plan", "mcp"}); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var st view.WorkspaceStatus
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Workspace.PendingOperation != nil {
		t.Fatalf("an operation was left pending: %+v", st.Workspace.PendingOperation)
	}
	got, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	if len(treetest.Diff(saved, got)) > 0 && len(treetest.Diff(changed, got)) > 0 {
		t.Fatalf("the workspace is neither restored nor as it was:\n%s", treetest.Summary(treetest.Diff(saved, got)))
	}

	// Once closing, a call that still arrives is refused as interrupted.
	tools := newMCPTools(&cli.Runner{}, dir)
	tools.drain()
	var v view.WorkspaceStatus
	_, err = tools.call(context.Background(), &v, "status")
	var f *mcpFailure
	if !asFailure(err, &f) || f.view.Error.Kind != "interrupted" || f.view.Code != cli.ExitInterrupted {
		t.Fatalf("a call after drain: %v", err)
	}
}

// drain waits for a command under way: here a restore waiting for the workspace lock.
func TestMCPDrainWaitsForTheCallUnderWay(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	base := createCheckpoint(t, dir)
	release := holdWorkspaceLock(t, dir)
	defer release()
	tools := newMCPTools(&cli.Runner{}, dir)
	done := make(chan error, 1)
	go func() {
		var v view.Rollback
		_, err := tools.call(context.Background(), &v, "--yes", "rollback", "--to-checkpoint="+base)
		done <- err
	}()
	for {
		tools.mu.Lock()
		n := tools.running
		tools.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tools.drain()
	// The call ends (its count drops) just before its goroutine hands over the result: a moment,
	// not the lock wait (seconds) it would still be in had drain not waited.
	select {
	case err := <-done:
		var f *mcpFailure
		if !asFailure(err, &f) || f.view.Error.Kind != "conflict" {
			t.Fatalf("the restore under a held lock: %v", err)
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("drain returned while the call was still running")
	}
}

// Requests piped at once and stdin closed right after (`printf … | plan mcp`) are each answered:
// the end of stdin waits for the answers still owed.
func TestMCPAnswersEveryRequestReadBeforeStdinClosed(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	serveWith := func(want int, lines ...string) map[string]string {
		t.Helper()
		var out, errOut strings.Builder
		r := cli.Runner{Stdin: strings.NewReader(strings.Join(lines, "\n") + "\n"), Stdout: &out, Stderr: &errOut, Dir: dir, MCP: Serve}
		if code := r.Run(context.Background(), []string{"plan", "mcp"}); code != want {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			switch {
			case line == "": // no answer at all
				continue
			case strings.HasPrefix(line, "["):
				got["batch"] = line
				continue
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			got[string(m.ID)] = line
		}
		return got
	}
	serve := func(lines ...string) map[string]string { t.Helper(); return serveWith(cli.ExitOK, lines...) }
	initialize := func(version string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	}
	for range 5 { // the race it fixes lost a different number of answers from one run to the next
		got := serve(initialize("2025-06-18"),
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"checkpoint","arguments":{"note":"piped"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
		if len(got) != 3 || got["1"] == "" || !strings.Contains(got["2"], `"tools"`) || !strings.Contains(got[`"three"`], `"id`) {
			t.Fatalf("want the answers of 1, 2 and \"three\": %v", got)
		}
	}
	// A batch (protocols before 2025-06-18) counts each of its requests.
	got := serve(initialize("2025-03-26"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}]`)
	if got["1"] == "" || !strings.Contains(got["batch"], `"id":2`) || !strings.Contains(got["batch"], `"id":3`) {
		t.Fatalf("a batch: %v", got)
	}
	// Input that is not JSON is passed on as it is: the SDK ends the session (exit 1, naming the
	// parse error), and what was still owed an answer does not hold plan mcp up.
	serveWith(cli.ExitInternal, initialize("2025-06-18"), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `this is not JSON`)
}
