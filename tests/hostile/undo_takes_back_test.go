package hostile

import (
	"strings"
	"testing"
)

// Undo of what took work back (round 4 of the hostile attacks on the agents' undo).

// Finding: gc collected the result of the tool calls a rewind reverted, and `plan undo` of the
// rewind gave the calls their standing back without it: `plan show` of the call failed (exit 6,
// an object missing) while `plan verify` said every checkpoint was intact. A reverted call's
// result is kept while an undo can make it stand again.
func TestHostileUndoneRewindKeepsTheCallsResultThroughGC(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	s := agentSession{w: w, id: "s1"}
	w.write("a.txt", "base\n")
	s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": "go"}).quiet(t, "prompt")
	s.send(t, nil, "PreToolUse", bashCall("toolu_1", "gen")).quiet(t, "pre")
	w.write("a.txt", randomContent(t, 3000)) // the agent's output, found nowhere else
	s.send(t, nil, "PostToolUse", bashCall("toolu_1", "gen")).quiet(t, "post")
	w.write("a.txt", "the user's edit\n") // before the turn ends
	w.must("--yes", "rewind", "--session", s.id, "--turn", "1")
	w.must("gc", "--grace", "0s")
	w.must("--yes", "undo")
	if out := w.must("show", "toolu_1"); !strings.Contains(out, "toolu_1") {
		t.Fatalf("plan show of the call after the undo: %s", out)
	}
	w.must("verify", "--read-data")
}

// Finding: a rollback (or a rewind) killed once its files were placed was finished by `plan
// recover`, but the command that would have logged it had died: the log held no entry for it, so
// `plan undo` skipped it and took back an older operation, and the user's work from just before
// the rollback stayed in a safety checkpoint nothing pointed to. Recovery now logs what it
// finishes, with its safety checkpoint.
func TestHostileUndoTakesBackARollbackRecoveryFinished(t *testing.T) {
	for _, at := range []string{"restore.staged", "restore.removed", "restore.applied"} {
		t.Run(at, func(t *testing.T) {
			w := newWorkspace(t, []string{"PLAN_WATCH=0"})
			w.write("a.txt", "first\n")
			first := w.checkpoint("first")
			w.write("a.txt", "the user's edit\n")
			w.write("u.txt", "work no checkpoint holds\n")
			r := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+at+"=kill"), "--yes", "rollback", "--to-checkpoint", first)
			if !r.killed {
				t.Fatalf("the rollback was not killed at %s: %s", at, r)
			}
			w.must("--yes", "recover")
			w.must("--yes", "undo")
			if got := w.read("a.txt"); got != "the user's edit\n" {
				t.Fatalf("after the undo a.txt holds %q", got)
			}
			if got := w.read("u.txt"); got != "work no checkpoint holds\n" {
				t.Fatalf("after the undo u.txt holds %q", got)
			}
		})
	}
}
