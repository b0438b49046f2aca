package hostile

import (
	"encoding/json"
	"strings"
	"testing"
)

// Text output never sends a terminal a control character plan did not write: a file name, an
// agent's command, prompt or tool call, a note or a label with ESC or BEL in it is shown quoted
// (Go's escapes, as git's core.quotePath), while JSON carries the exact bytes.
func TestTextOutputQuotesControlCharacters(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	w.write("plain.txt", "x\n")
	w.must("checkpoint", "create", "--note", "first")
	// A decision whose output holds control characters: plan log replays it escaped.
	w.must("-q", "exec", "--", "printf", `out\033[2J\007\n`)
	const (
		name    = "name\x1b[2Jx\a"
		command = "make\x1b[2J\x1b]0;owned\a"
		prompt  = "fix it\x1b]8;;http://evil\a"
		callID  = "toolu_esc"
		note    = "note\x1b[2J"
	)
	s := agentSession{w: w, id: "esc"}
	s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": prompt}).quiet(t, "prompt")
	s.send(t, nil, "PreToolUse", bashCall(callID, command)).quiet(t, "pre")
	w.write(name, "planted\n")
	s.send(t, nil, "PostToolUse", bashCall(callID, command)).quiet(t, "post")
	w.must("checkpoint", "create")
	w.write("after"+name, "more\n")

	raw := func(what string, r result) {
		t.Helper()
		for _, out := range []string{r.stdout, r.stderr} {
			if strings.ContainsAny(out, "\x1b\a") {
				t.Errorf("plan %s printed a raw control character:\n%q", what, out)
			}
		}
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "esc"}, {"diff", "@"}, {"diff", "--stat", "@"},
		{"diff", "--name-only", "@"}, {"diff", "--patch", "@"}, {"ls", "@"}, {"ls", "-r", "@"}, {"status"},
		{"show", callID}, {"show", "--patch", callID}, {"log", "--plan", "adhoc"}, {"history"}, {"checkpoint", "list"},
		{"checkpoint", "show", "--files", "@"}} {
		r := w.run(append([]string{"--no-pager"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		raw(strings.Join(args, " "), r)
	}
	// A note, and a message that echoes what was typed.
	w.must("checkpoint", "create", "--note", note)
	for _, args := range [][]string{{"checkpoint", "list"}, {"checkpoint", "show", "@"}, {"history"}, {"ls", "@", "no\x1b[2Jsuch"}} {
		r := w.run(append([]string{"--no-pager"}, args...)...)
		raw(strings.Join(args, " "), r)
	}
	// The names are shown, escaped, not dropped.
	if out := w.must("diff", "--name-only", "@~1"); !strings.Contains(out, `"aftername\x1b[2Jx\a"`) {
		t.Errorf("diff --name-only does not show the quoted name:\n%s", out)
	}
	if out := w.must("sessions", "esc"); !strings.Contains(out, `"Bash: make\x1b[2J\x1b]0;owned\a"`) || !strings.Contains(out, `"fix it\x1b]8;;http://evil\a"`) {
		t.Errorf("sessions does not show the quoted command and prompt:\n%s", out)
	}
	// An ordinary name, non-ASCII included, is shown as it is.
	w.write("café.txt", "ok\n")
	if out := w.must("diff", "--name-only", "@"); !strings.Contains(out, "\ncafé.txt\n") && !strings.HasPrefix(out, "café.txt\n") {
		t.Errorf("a printable name was quoted:\n%s", out)
	}

	// JSON carries the exact bytes.
	var sessions sessionsDoc
	w.mustJSON(&sessions, "sessions", "esc")
	var gotCall, gotFile bool
	for _, se := range sessions.Sessions {
		for _, tu := range se.Turns {
			for _, tc := range tu.ToolCalls {
				gotCall = gotCall || tc.ID == callID
				for _, f := range tc.Files {
					gotFile = gotFile || f.Path == name
				}
			}
		}
	}
	if !gotCall || !gotFile {
		t.Errorf("--json sessions lost the exact tool call %v or file name %v: %+v", gotCall, gotFile, sessions)
	}
	var text struct {
		Sessions []struct {
			Turns []struct {
				Prompt    string `json:"prompt"`
				ToolCalls []struct {
					Summary string `json:"summary"`
				} `json:"tool_calls"`
			} `json:"turns"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(w.must("--json", "sessions", "esc")), &text); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, se := range text.Sessions {
		for _, tu := range se.Turns {
			found[tu.Prompt] = true
			for _, tc := range tu.ToolCalls {
				found[tc.Summary] = true
			}
		}
	}
	if !found[prompt] || !found["Bash: "+command] {
		t.Errorf("--json sessions lost the exact prompt or command: %v", found)
	}
	var ls struct {
		Entries []struct {
			Path string `json:"path"`
		} `json:"entries"`
	}
	w.mustJSON(&ls, "ls", "@")
	var diff struct {
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
	}
	w.mustJSON(&diff, "diff", "@~1")
	paths := map[string]bool{}
	for _, e := range ls.Entries {
		paths["ls "+e.Path] = true
	}
	for _, c := range diff.Changes {
		paths["diff "+c.Path] = true
	}
	if !paths["ls "+name] || !paths["diff after"+name] {
		t.Errorf("--json ls or diff lost the exact name: %v", paths)
	}
}
