package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/tests/testkit/treetest"
)

// agentSession plays one Claude Code session against a workspace through the real binary.
type agentSession struct {
	w  *workspace
	id string
}

// hookResult is one `plan hook` process.
type hookResult struct {
	stdout, stderr string
	code           int
}

// send runs `plan hook claude event` in the workspace with the payload fields extra, env added.
func (s agentSession) send(t *testing.T, env []string, event string, extra map[string]any) hookResult {
	t.Helper()
	m := map[string]any{"session_id": s.id, "cwd": s.w.dir, "hook_event_name": event, "transcript_path": "/dev/null", "permission_mode": "default"}
	for k, v := range extra {
		m[k] = v
	}
	payload, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(planBinary(t), "hook", "claude", event)
	cmd.Dir, cmd.Env, cmd.Stdin = s.w.dir, append(baseEnv(), append(s.w.env, env...)...), bytes.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := hookResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func bashCall(id, command string) map[string]any {
	return map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": id}
}

// quiet requires a hook that recorded and said nothing.
func (r hookResult) quiet(t *testing.T, what string) {
	t.Helper()
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
	}
}

type sessionsDoc struct {
	Sessions []struct {
		Turns []struct {
			ToolCalls []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Files  []struct {
					Path string `json:"path"`
				} `json:"files"`
			} `json:"tool_calls"`
		} `json:"turns"`
	} `json:"sessions"`
}

// Parallel tool calls run their hooks at once: every hook waits for the workspace lock, none fails
// or is lost, and each call is recorded with the file it wrote.
func TestParallelToolCallHooksSerialise(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("seed.txt", "seed")
	s := agentSession{w: w, id: "parallel-session"}
	s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": "go"}).quiet(t, "prompt")
	const n = 8
	run := func(event string, change bool) {
		var wg sync.WaitGroup
		results := make([]hookResult, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("toolu_par%02d", i)
				if change {
					w.write(fmt.Sprintf("out/%d.txt", i), strings.Repeat("x", i+1))
				}
				results[i] = s.send(t, nil, event, bashCall(id, fmt.Sprintf("echo %d > out/%d.txt", i, i)))
			}()
		}
		wg.Wait()
		for i, r := range results {
			r.quiet(t, fmt.Sprintf("%s of call %d", event, i))
		}
	}
	run("PreToolUse", false)
	run("PostToolUse", true)
	s.send(t, nil, "Stop", nil).quiet(t, "stop")
	var doc sessionsDoc
	w.mustJSON(&doc, "sessions")
	calls := doc.Sessions[0].Turns[0].ToolCalls
	if len(calls) != n {
		t.Fatalf("%d calls recorded, want %d: %+v", len(calls), n, calls)
	}
	for _, c := range calls {
		var i int
		if _, err := fmt.Sscanf(c.ID, "toolu_par%02d", &i); err != nil || c.Status != "succeeded" {
			t.Fatalf("call %+v", c)
		}
		found := false
		for _, f := range c.Files {
			found = found || f.Path == fmt.Sprintf("out/%d.txt", i)
		}
		if !found {
			t.Errorf("call %s does not list the file it wrote: %+v", c.ID, c.Files)
		}
	}
	w.must("verify")
}

// A hook killed while it checkpoints (before or while it records) leaves nothing half-made: the
// call's end is a warning, the next calls are recorded, the store verifies, and a rewind to before
// a later call is byte-exact.
func TestHookKilledMidCheckpoint(t *testing.T) {
	for _, fp := range []string{"checkpoint.stored", "record-prepared", "record-commit"} {
		t.Run(fp, func(t *testing.T) {
			w := newWorkspace(t, nil)
			w.write("a.txt", "one")
			s := agentSession{w: w, id: "killed-" + strings.ReplaceAll(fp, ".", "-")}
			r := s.send(t, []string{"PLAN_FAILPOINT=" + fp}, "PreToolUse", bashCall("toolu_killed", "edit a"))
			if r.code != -1 {
				t.Fatalf("the failpoint %s was not reached (exit %d): %s", fp, r.code, r.stderr)
			}
			w.write("a.txt", "two")
			post := s.send(t, nil, "PostToolUse", bashCall("toolu_killed", "edit a"))
			if post.code != 0 || post.stdout != "" && !strings.Contains(post.stdout, "systemMessage") {
				t.Fatalf("post after a killed pre: %+v", post)
			}
			s.send(t, nil, "PreToolUse", bashCall("toolu_next", "rm a")).quiet(t, "next pre")
			want, err := treetest.Read(w.dir, map[string]bool{".plan": true})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(w.path("a.txt")); err != nil {
				t.Fatal(err)
			}
			s.send(t, nil, "PostToolUse", bashCall("toolu_next", "rm a")).quiet(t, "next post")
			w.must("verify", "--read-data")
			w.must("--yes", "rewind", "--session", s.id, "--tool-call", "toolu_next")
			treetest.RequireSame(t, w.dir, map[string]bool{".plan": true}, want, "rewind after a killed hook")
		})
	}
}

// The session: a file written, 100 files changed through the shell, one edited, then a
// directory removed. Rewinding to before the removal is byte-exact and so is its undo; a surgical
// revert of the middle call keeps the calls after it.
func TestRewindAndUndoAreByteExact(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 20 {
		w.write(fmt.Sprintf("lib/keep/%02d.txt", i), strings.Repeat("k", i*37+1))
	}
	w.write("config.txt", "a\nb\nc\nd\ne\n")
	s := agentSession{w: w, id: "byte-exact"}
	s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": "refactor"}).quiet(t, "prompt")
	call := func(id, command string, change func()) {
		s.send(t, nil, "PreToolUse", bashCall(id, command)).quiet(t, id+" pre")
		change()
		s.send(t, nil, "PostToolUse", bashCall(id, command)).quiet(t, id+" post")
	}
	call("toolu_write", "write notes", func() { w.write("notes.md", "# notes\n") })
	call("toolu_bulk", "sed -i over 100 files", func() {
		for i := range 100 {
			w.write(fmt.Sprintf("gen/%03d.go", i), fmt.Sprintf("package gen // %d\n", i))
		}
	})
	call("toolu_edit", "edit config", func() { w.write("config.txt", "a\nb\nc\nd\nE\n") })
	beforeRm, err := treetest.Read(w.dir, map[string]bool{".plan": true})
	if err != nil {
		t.Fatal(err)
	}
	call("toolu_rm", "rm -rf lib", func() {
		if err := os.RemoveAll(w.path("lib")); err != nil {
			t.Fatal(err)
		}
	})
	s.send(t, nil, "Stop", nil).quiet(t, "stop")
	afterRm, err := treetest.Read(w.dir, map[string]bool{".plan": true})
	if err != nil {
		t.Fatal(err)
	}
	w.must("--yes", "rewind", "--session", s.id, "--tool-call", "toolu_rm")
	treetest.RequireSame(t, w.dir, map[string]bool{".plan": true}, beforeRm, "rewind to before rm -rf")
	w.must("--yes", "undo")
	treetest.RequireSame(t, w.dir, map[string]bool{".plan": true}, afterRm, "undo of the rewind")
	// The middle call reverted alone: the gen/ files go, the edit and the removal stay.
	w.must("--yes", "revert", "--decision", "toolu_bulk", "--reason", "wrong generator")
	if _, err := os.Stat(w.path("gen")); err == nil {
		t.Fatal("the revert of the bulk call left gen/")
	}
	if got := w.read("config.txt"); got != "a\nb\nc\nd\nE\n" {
		t.Fatalf("the later edit was lost: %q", got)
	}
	if _, err := os.Stat(w.path("lib")); err == nil {
		t.Fatal("the revert brought back what a later call removed")
	}
	if w.read("notes.md") != "# notes\n" {
		t.Fatal("the earlier call's file was lost")
	}
	w.must("verify", "--read-data")
}
