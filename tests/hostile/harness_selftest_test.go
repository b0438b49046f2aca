package hostile

import "testing"

// The harness against the plainest workspace: init, a checkpoint, a refused bad ID with its exit
// code and kind, a rollback that brings a file back.
func TestHarnessRoundTrip(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a.txt", "one")
	id := w.checkpoint("first")
	w.write("a.txt", "two")
	w.expect(3, "invalid", "rollback", "--to-checkpoint", "NOT.AN.ID", "--yes")
	w.must("rollback", "--to-checkpoint", id, "--yes")
	if got := w.read("a.txt"); got != "one" {
		t.Fatalf("a.txt after rollback = %q, want one", got)
	}
}
