package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// The record of a tree's unreadable paths is a union: adding what it holds writes nothing, adding
// more keeps the rest. A missing record is none; a damaged one is an error.
func TestUnreadableRecord(t *testing.T) {
	w := newTestWS(t)
	var h tree.Hash
	h[0] = 1
	if got, err := loadUnreadable(w.l, h); err != nil || got != nil {
		t.Fatalf("no record: %q %v", got, err)
	}
	if err := saveUnreadable(w.l, h, []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(w.l.unreadableDir(), h.String())
	before, _ := os.Stat(p)
	if err := saveUnreadable(w.l, h, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(p); !os.SameFile(before, after) {
		t.Error("a record holding the paths already was written again")
	}
	if err := saveUnreadable(w.l, h, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if got, err := loadUnreadable(w.l, h); err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("record: %q %v", got, err)
	}
	if err := os.WriteFile(p, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadUnreadable(w.l, h); err == nil {
		t.Fatal("a damaged record was read")
	}
	if err := saveUnreadable(w.l, h, []string{"d"}); err == nil {
		t.Fatal("a damaged record was replaced")
	}
	if !under("pgdata", []string{"pgdata"}) || !under("pgdata/x", []string{"pgdata"}) || under("pgdata2", []string{"pgdata"}) {
		t.Error("under")
	}
	if msg := UnreadableWarning([]string{"a", "b", "c", "d", "e", "f", "g"}); !strings.Contains(msg, `"e"`) || strings.Contains(msg, `"f"`) || !strings.Contains(msg, "and 2 more") {
		t.Errorf("warning: %s", msg)
	}
}

// A restore to or from a tree whose snapshot could not read a path leaves everything at or under
// it alone: neither deleted (the target lacks it) nor overwritten. Recovery's reconcile too. A
// damaged record fails the restore before anything is touched.
func TestRestoreLeavesUnreadablePathsAlone(t *testing.T) {
	w := newTestWS(t)
	w.write("src/app.py", "precious\n", 0o644)
	w.write("pgdata/PG_VERSION", "16\n", 0o644)
	w.remove("pgdata")
	without := w.snapshot() // as a snapshot that could not read pgdata records the workspace
	if err := saveUnreadable(w.l, without.Root, []string{"pgdata"}); err != nil {
		t.Fatal(err)
	}
	w.write("pgdata/PG_VERSION", "17, written since\n", 0o644)
	w.write("src/app.py", "changed\n", 0o644)
	cur := w.snapshot() // readable again: the safety checkpoint a rollback takes
	stats, err := w.r.Apply(t.Context(), cur.Root, without.Root, nil)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got, _ := os.ReadFile(w.abs("pgdata/PG_VERSION")); string(got) != "17, written since\n" {
		t.Fatalf("pgdata/PG_VERSION holds %q after the restore", got)
	}
	if got, _ := os.ReadFile(w.abs("src/app.py")); string(got) != "precious\n" {
		t.Fatalf("src/app.py holds %q", got)
	}
	if stats.Written != 1 {
		t.Errorf("stats %+v", stats)
	}
	if _, err := w.r.Reconcile(t.Context(), without.Root); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if _, err := os.Stat(w.abs("pgdata/PG_VERSION")); err != nil {
		t.Fatalf("recovery removed what its target could not read: %v", err)
	}
	if err := os.WriteFile(filepath.Join(w.l.unreadableDir(), without.Root.String()), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Apply(t.Context(), cur.Root, without.Root, nil); err == nil || !strings.Contains(err.Error(), "could not record") {
		t.Fatalf("Apply with a damaged record: %v", err)
	}
	if _, err := w.r.Reconcile(t.Context(), without.Root); err == nil {
		t.Fatal("Reconcile with a damaged record went on")
	}
	if _, err := os.Stat(w.abs("pgdata/PG_VERSION")); err != nil {
		t.Fatalf("a refused restore removed pgdata: %v", err)
	}
}
