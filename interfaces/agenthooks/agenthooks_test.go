package agenthooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every fixture is a real-shaped payload named AGENT-EVENT[-TOOL].json: it parses to the action
// its event and tool say.
func TestFixturesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	want := map[string]Action{
		"claude-UserPromptSubmit": Prompt, "claude-PreToolUse-Write": BeforeTool, "claude-PostToolUse-Write": AfterTool,
		"claude-PreToolUse-Bash": BeforeTool, "claude-PostToolUse-Bash": AfterTool, "claude-PreToolUse-Read": Ignore,
		"claude-Stop": EndTurn, "claude-SessionEnd": EndTurn, "codex-UserPromptSubmit": Prompt,
		"codex-PreToolUse-Bash": BeforeTool, "codex-PostToolUse-Bash": AfterTool, "codex-Stop": EndTurn,
		"gemini-BeforeAgent": Prompt, "gemini-BeforeTool-write_file": BeforeTool, "gemini-AfterTool-write_file": AfterTool,
		"gemini-AfterAgent": EndTurn,
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		parts := strings.SplitN(name, "-", 3)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Parse(parts[0], parts[1], b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if a, ok := want[name]; !ok || ev.Action != a {
			t.Errorf("%s: action %v, want %v", name, ev.Action, a)
		}
		if ev.Session == "" || ev.Cwd != "$CWD" {
			t.Errorf("%s: session %q cwd %q", name, ev.Session, ev.Cwd)
		}
		if ev.Action == BeforeTool || ev.Action == AfterTool {
			if ev.CallID == "" || ev.Summary == "" || ev.Failed {
				t.Errorf("%s: %+v", name, ev)
			}
			if ev.Derived != (parts[0] == "gemini") {
				t.Errorf("%s: derived %v", name, ev.Derived)
			}
		}
	}
}

func TestParseDetails(t *testing.T) {
	ev, err := Parse("claude", "PreToolUse", []byte(`{"session_id":"s","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"rm  -rf\n build"}}`))
	if err != nil || ev.Summary != "Bash: rm -rf build" || ev.CallID != "toolu_1" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = Parse("codex", "PreToolUse", []byte(`{"session_id":"s","tool_name":"exec_command","tool_use_id":"c","tool_input":{"cmd":["git","status"]}}`))
	if err != nil || ev.Summary != "exec_command: git status" {
		t.Fatalf("argv summary: %+v %v", ev, err)
	}
	ev, err = Parse("claude", "PreToolUse", []byte(`{"session_id":"s","tool_name":"Edit","tool_use_id":"t","tool_input":null}`))
	if err != nil || ev.Summary != "Edit" {
		t.Fatalf("no input: %+v %v", ev, err)
	}
	for _, resp := range []string{`{"exit_code":2}`, `{"exitCode":1}`, `{"success":false}`, `{"interrupted":true}`, `{"error":"boom"}`} {
		ev, err := Parse("codex", "PostToolUse", []byte(`{"session_id":"s","tool_name":"Bash","tool_use_id":"c","tool_input":{},"tool_response":`+resp+`}`))
		if err != nil || !ev.Failed {
			t.Errorf("%s: %+v %v", resp, ev, err)
		}
	}
	for _, resp := range []string{`"text"`, `{"exit_code":0,"error":""}`, `{}`} {
		ev, err := Parse("codex", "PostToolUse", []byte(`{"session_id":"s","tool_name":"Bash","tool_use_id":"c","tool_input":{},"tool_response":`+resp+`}`))
		if err != nil || ev.Failed {
			t.Errorf("%s: %+v %v", resp, ev, err)
		}
	}
	ev, err = Parse("gemini", "AfterTool", []byte(`{"session_id":"s","tool_name":"replace","tool_input":{"b":1,"a":2},"error":"no match"}`))
	if err != nil || !ev.Failed {
		t.Errorf("gemini error: %+v %v", ev, err)
	}
	// A derived ID does not depend on key order or spacing.
	a, _ := Parse("gemini", "BeforeTool", []byte(`{"session_id":"s","tool_name":"replace","tool_input":{"b":1,"a":2}}`))
	b, _ := Parse("gemini", "BeforeTool", []byte(`{"session_id":"s","tool_name":"replace","tool_input":{ "a":2, "b":1 }}`))
	if a.CallID != b.CallID || len(a.CallID) != 24 {
		t.Errorf("derived IDs %q %q", a.CallID, b.CallID)
	}
	if ev, err := Parse("gemini", "BeforeTool", []byte(`{"session_id":"s","tool_name":"read_file","tool_input":{}}`)); err != nil || ev.Action != Ignore {
		t.Errorf("read-only: %+v %v", ev, err)
	}
	if ev, err := Parse("claude", "SessionStart", []byte(`{"session_id":"s","source":"startup"}`)); err != nil || ev.Action != Ignore {
		t.Errorf("session start: %+v %v", ev, err)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ agent, event, payload, want string }{
		{"cursor", "PreToolUse", `{}`, "unknown agent"},
		{"gemini", "PreToolUse", `{}`, "unknown gemini hook event"},
		{"claude", "Stop", ``, "not a JSON object"},
		{"claude", "Stop", `[1]`, "not a JSON object"},
		{"claude", "Stop", `{"session_id":1}`, "malformed JSON"},
		{"claude", "Stop", `{"session_id":"s","hook_event_name":"SessionEnd"}`, "is a SessionEnd event"},
		{"claude", "Stop", `{"session_id":"  "}`, "no session_id"},
		{"claude", "PreToolUse", `{"session_id":"s"}`, "no tool_name"},
		{"claude", "PreToolUse", `{"session_id":"s","tool_name":"Bash","tool_input":[1],"tool_use_id":"t"}`, "not a JSON object"},
		{"codex", "PreToolUse", `{"session_id":"s","tool_name":"Bash","tool_input":{}}`, "no tool_use_id"},
	} {
		if _, err := Parse(tc.agent, tc.event, []byte(tc.payload)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s %s: %v", tc.agent, tc.event, tc.payload, err)
		}
	}
}

func TestReplies(t *testing.T) {
	if r := Allow(); r != (Reply{}) {
		t.Errorf("allow: %+v", r)
	}
	w := Warn("careful")
	var v map[string]string
	if err := json.Unmarshal([]byte(w.Stdout), &v); err != nil || v["systemMessage"] != "plan: careful" || w.Code != 0 || w.Stderr != "plan: warning: careful\n" {
		t.Errorf("warn: %+v %v", w, err)
	}
	if r := Block("gemini", "BeforeTool", "no"); r.Code != 2 || r.Stdout != "" || r.Stderr != "plan: no\n" {
		t.Errorf("block: %+v", r)
	}
	if r := Block("claude", "PostToolUse", "no"); r.Code != 0 || !strings.Contains(r.Stdout, "systemMessage") {
		t.Errorf("block of an event that cannot block: %+v", r)
	}
	if r := Misuse("bad"); r.Code != 1 || r.Stdout != "" {
		t.Errorf("misuse: %+v", r)
	}
	for _, a := range Agents {
		if len(Events(a)) < 5 || len(mutating[a]) < 3 {
			t.Errorf("%s: events %v tools %v", a, Events(a), mutating[a])
		}
		if !slices.ContainsFunc(Events(a), func(e string) bool { return CanBlock(a, e) }) {
			t.Errorf("%s: no event can block", a)
		}
	}
	if Events("cursor") != nil || CanBlock("claude", "Stop") {
		t.Error("unknown agent or non-blocking event")
	}
}
