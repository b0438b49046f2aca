package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// An agent's hooks that plan watch serves never merge packs themselves (a merge is the slowest
// part of the rare hook that does one, on the agent's critical path): the service merges them
// between calls, and every call's checkpoint still restores byte for byte. Without the service,
// hooks merge as every command does.
func TestHooksLeaveMergingToTheWatchService(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "base.txt", "base\n")
	mustPlan(t, dir, "checkpoint", "create")
	startWatch(t, dir)
	l, err := bootstrap.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int, phase string) string {
		return fmt.Sprintf(`{"session_id":"merge-session","cwd":%q,"hook_event_name":%q,"tool_name":"Write",`+
			`"tool_input":{"file_path":"%s/f%02d.txt","content":"x"},"tool_use_id":"toolu_merge_%02d"}`, dir, phase, dir, i, i)
	}
	maxPacks := 0
	for i := range 24 {
		if o := hookIn(dir, write(i, "PreToolUse"), "claude", "PreToolUse"); o.code != ExitOK || o.stderr != "" {
			t.Fatalf("pre hook %d: %v", i, o)
		}
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("version %d\n", i))
		if o := hookIn(dir, write(i, "PostToolUse"), "claude", "PostToolUse"); o.code != ExitOK || o.stderr != "" {
			t.Fatalf("post hook %d: %v", i, o)
		}
		maxPacks = max(maxPacks, packFiles(t, dir))
	}
	// Had the hooks merged, 24 calls' packs would never have reached 16 (the service merges only
	// between calls, after a quiet time the hooks mostly do not leave it).
	st, err := bootstrap.WatchQuery(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if st.Merged == 0 && maxPacks < 16 {
		t.Fatalf("the packs never passed %d and the service merged none: the hooks merged themselves", maxPacks)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st, err = bootstrap.WatchQuery(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		if st.Merged > 0 && packFiles(t, dir) < 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service did not merge the hooks' packs: %d packs, status %+v", packFiles(t, dir), st)
		}
	}
	if o := mustPlan(t, dir, "watch", "status"); !strings.Contains(o.stdout, "small packs merged between commands") {
		t.Fatalf("status: %v", o)
	}
	mustPlan(t, dir, "verify", "--read-data")
	v := sessionsOf(t, dir)
	if len(v.Sessions) != 1 || len(v.Sessions[0].Turns) == 0 {
		t.Fatalf("sessions: %+v", v)
	}
	calls := 0
	for _, turn := range v.Sessions[0].Turns {
		calls += len(turn.ToolCalls)
	}
	if calls != 24 {
		t.Fatalf("%d calls recorded, want 24", calls)
	}
	// Rewound to before the 5th call, the workspace holds the first four files as written; undone,
	// all 24 again.
	mustPlan(t, dir, "--yes", "rewind", "--session", "merge-session", "--tool-call", "toolu_merge_04")
	for i := range 24 {
		name := fmt.Sprintf("f%02d.txt", i)
		if i < 4 && readFile(t, dir, name) != fmt.Sprintf("version %d\n", i) || i >= 4 && exists(dir, name) {
			t.Fatalf("%s after the rewind", name)
		}
	}
	mustPlan(t, dir, "--yes", "undo")
	for i := range 24 {
		if got := readFile(t, dir, fmt.Sprintf("f%02d.txt", i)); got != fmt.Sprintf("version %d\n", i) {
			t.Fatalf("f%02d.txt after undoing the rewind: %q", i, got)
		}
	}
}
