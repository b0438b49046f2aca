package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/tests/testkit/treetest"
)

// plan restore REF --target DIR killed at any moment: DIR is as it was (missing) or holds the whole
// checkpoint byte for byte, never part of it; and the workspace is never touched.
func TestReadingRestoreTargetKilledIsAllOrNothing(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 1500 {
		w.write(fmt.Sprintf("d%02d/f%04d", i%30, i), strings.Repeat(fmt.Sprint(i), 200))
	}
	id := w.checkpoint("many")
	want, err := treetest.Read(w.dir, map[string]bool{".plan": true})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for trial := range trials(4) {
		target := filepath.Join(t.TempDir(), "copy")
		p := startPlan(t, w.dir, nil, "restore", id, "--target", target)
		time.Sleep(time.Duration(20+trial*200) * time.Millisecond)
		r := p.kill(t)
		switch _, err := os.Lstat(target); {
		case os.IsNotExist(err):
			outcomes["absent"]++
		case err == nil:
			treetest.RequireSame(t, target, nil, want, "a restore --target killed after it finished")
			outcomes["complete"]++
		default:
			t.Fatal(err)
		}
		if !r.killed && r.code != 0 {
			t.Fatalf("restore --target: %s", r)
		}
	}
	treetest.RequireSame(t, w.dir, map[string]bool{".plan": true}, want, "the workspace after killed restores")
	t.Logf("outcomes: %v", outcomes)
}

// A .plan in a directory above, belonging to another user (planted in a shared /tmp), never
// becomes the workspace of a command started below it: refused, naming it, nothing written there.
func TestReadingDiscoveryRefusesAnotherUsersWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	base := t.TempDir()
	planted := filepath.Join(base, ".plan")
	sub := filepath.Join(base, "project")
	for _, d := range []string{planted, sub} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(planted, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(plan, []byte("name: p\ndecisions:\n  - id: a\n    run: touch a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json", "status"}, {"--json", "checkpoint", "create"}, {"--json", "run", plan}} {
		r := runPlan(t, sub, nil, args...)
		if r.code != 5 || r.errorKind() != "conflict" || !strings.Contains(r.stderr, "belongs to another user") {
			t.Fatalf("want exit 5 naming the other user's workspace:\n%s", r)
		}
	}
	if names, _ := os.ReadDir(planted); len(names) != 0 {
		t.Fatalf("plan wrote into another user's .plan: %v", names)
	}
}
