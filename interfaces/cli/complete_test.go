package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// completions runs a completion request from dir for the words before the one being completed.
func completions(t *testing.T, dir string, words ...string) []string {
	t.Helper()
	o := invoke(Runner{Dir: dir}, append(slices.Clone(words), completionFlag)...)
	if o.code != ExitOK || o.stderr != "" {
		t.Fatalf("completing after %q: %v", words, o)
	}
	return strings.Fields(o.stdout)
}

// The completion scripts ask plan for the next word: commands and subcommands, flags, and the
// names a value can take in the workspace the command line names or stands in.
func TestCompletion(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "build", "--", "sh", "-c", "echo b > b.txt")
	mustPlan(t, dir, "exec", "--id", "test", "--", "sh", "-c", "echo t > t.txt")
	mustPlan(t, dir, "--yes", "correct", "--decision", "test", "--reason", "r", "--no-reexecute")
	var cps []struct {
		ShortID string `json:"short_id"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil || len(cps) < 3 {
		t.Fatalf("checkpoints: %v %v", cps, err)
	}
	var corrections []struct {
		ID string `json:"correction_id"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "correction", "list").stdout), &corrections); err != nil || len(corrections) != 1 {
		t.Fatalf("corrections: %v %v", corrections, err)
	}
	checkpointNames := []string{"@", "@~1", "@~2", cps[0].ShortID, cps[len(cps)-1].ShortID, "build^", "build", "test^", "test"}
	for _, c := range []struct {
		words []string
		want  []string // each must be offered
		not   []string // none may be
	}{
		{nil, []string{"init", "rollback", "checkpoint", "help"}, []string{"create"}},
		{[]string{"checkpoint"}, []string{"create", "list", "prune"}, []string{"rollback"}},
		{[]string{"--json", "checkpoint"}, []string{"create"}, nil},
		{[]string{"rollback", "--to-checkpoint"}, checkpointNames, []string{"--dry-run"}},
		{[]string{"rollback", "--to"}, []string{"--to-checkpoint", "--dry-run", "--json"}, []string{"@"}},
		{[]string{"diff"}, checkpointNames, nil},
		{[]string{"diff", "@", "--stat"}, checkpointNames, nil},
		{[]string{"cat"}, checkpointNames, nil},
		{[]string{"cat", "@"}, nil, []string{"@"}}, // a path: the shell's file names
		{[]string{"checkpoint", "show"}, checkpointNames, nil},
		{[]string{"show"}, []string{"build", "test"}, []string{"build^", "@"}},
		{[]string{"revert", "--reason", "r", "--decision"}, []string{"build", "test"}, []string{"@"}},
		{[]string{"status", "--plan"}, []string{"adhoc"}, nil},
		{[]string{"correction", "show"}, []string{corrections[0].ID}, nil},
		{[]string{"init", "--store"}, nil, []string{"@"}}, // a value plan cannot name
		{[]string{"status", "extra"}, nil, []string{"@"}},
	} {
		got := completions(t, dir, c.words...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("after %q: %q not offered in %q", c.words, w, got)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("after %q: %q offered in %q", c.words, w, got)
			}
		}
	}
	// -C names the workspace from anywhere; outside any workspace nothing is offered, and
	// nothing is created.
	outside := t.TempDir()
	if got := completions(t, outside, "-C", dir, "show"); !slices.Contains(got, "build") {
		t.Errorf("-C DIR show: %q", got)
	}
	if got := completions(t, outside, "diff"); len(got) != 0 {
		t.Errorf("outside a workspace: %q", got)
	}
	if got := completions(t, newWorkspace(t), "show"); len(got) != 0 {
		t.Errorf("decisions of a workspace without plans: %q", got)
	}
	if exists(outside, ".plan") {
		t.Errorf("a completion outside a workspace made one")
	}
}

// An agent's sessions and tool calls are offered where rewind takes them.
func TestCompletionOfSessions(t *testing.T) {
	dir := claudeTurn(t)
	v := sessionsOf(t, dir)
	if len(v.Sessions) != 1 || len(v.Sessions[0].Turns) != 1 || len(v.Sessions[0].Turns[0].ToolCalls) == 0 {
		t.Fatalf("sessions: %+v", v)
	}
	if got := completions(t, dir, "rewind", "--session"); !slices.Contains(got, v.Sessions[0].Session) {
		t.Errorf("--session: %q, want %s", got, v.Sessions[0].Session)
	}
	got := completions(t, dir, "rewind", "--session", v.Sessions[0].Session, "--tool-call")
	for _, c := range v.Sessions[0].Turns[0].ToolCalls {
		if !slices.Contains(got, c.ID) {
			t.Errorf("--tool-call: %q lacks %s", got, c.ID)
		}
	}
}
