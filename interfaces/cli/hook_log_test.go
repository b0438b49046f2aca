package cli

import (
	"strings"
	"testing"
)

// A tool call's end and its operation-log entry commit together; a log that refuses the entry
// leaves the call recorded, and the hook says so on stderr without blocking the agent.
func TestPostHookRecordsTheCallWhenTheLogRefusesItsEntry(t *testing.T) {
	dir := newWorkspace(t)
	quietHook(t, dir, "claude-UserPromptSubmit", "claude", "UserPromptSubmit")
	quietHook(t, dir, "claude-PreToolUse-Write", "claude", "PreToolUse")
	writeFile(t, dir, "README.md", "# Project\n")
	refuseLogEntries(t, dir, "WHEN NEW.kind = 'decision'")
	o := hookIn(dir, fixture(t, dir, "claude-PostToolUse-Write"), "claude", "PostToolUse")
	if o.code != 0 || o.stdout != "" || !strings.Contains(o.stderr, "operation log: ") ||
		!strings.Contains(o.stderr, "the operation log refuses writes") {
		t.Fatalf("post hook with the log refusing: %v", o)
	}
	v := sessionsOf(t, dir)
	if len(v.Sessions) != 1 || len(v.Sessions[0].Turns) != 1 || len(v.Sessions[0].Turns[0].ToolCalls) != 1 {
		t.Fatalf("sessions: %+v", v)
	}
	if c := v.Sessions[0].Turns[0].ToolCalls[0]; c.Status != "succeeded" || len(c.Files) != 1 || c.Files[0].Path != "README.md" {
		t.Errorf("the call is not recorded as it ended: %+v", c)
	}
}
