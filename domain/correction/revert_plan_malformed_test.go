package correction

import (
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// Trees that name no directory for the paths under it, or a file with paths under it (no scan
// gives one): the planner's guards keep the target consistent with them too.
func TestPlanRevertTreesWithoutTheirDirectories(t *testing.T) {
	// The decision deleted file x; later work lives at x/z, with no entry for directory x: x cannot
	// come back as a file, and the directory is made for x/z.
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("x", "b\n", 0o644)}
	z := f.file("x/z", "z\n", 0o644)
	f.live = []tree.Entry{z}
	p := f.plan(t, false)
	if c := p.Conflicts(); len(c) != 1 || c[0].Path != "x" || c[0].Why != "a directory holding later work is there now" {
		t.Fatalf("conflicts %+v", c)
	}
	if len(p.Target) != 2 || !p.Target[0].Same(dirEntry("x")) || !p.Target[1].Same(z) {
		t.Fatalf("target %v", p.Target)
	}

	// A live file with a path under it, and nothing to revert: the live entries stay as they are.
	f = newRevertFixture()
	d, df := f.file("d", "later\n", 0o644), f.file("d/f", "f\n", 0o644)
	f.live = []tree.Entry{d, df}
	p = f.plan(t, false)
	if len(p.Paths) != 0 || len(p.Target) != 2 || !p.Target[0].Same(d) || !p.Target[1].Same(df) {
		t.Fatalf("paths %v, target %v", p.Paths, p.Target)
	}
}

// delTarget of a path the target lacks changes nothing (the counts hasUnder reads included).
func TestDelTargetOfAnAbsentPath(t *testing.T) {
	pl := &planner{target: map[string]tree.Entry{}, under: map[string]int{}}
	pl.setTarget(tree.Entry{Path: "a/b", Kind: tree.KindFile})
	pl.delTarget("a/c")
	if len(pl.target) != 1 || pl.under["a"] != 1 || !pl.hasUnder("a") {
		t.Fatalf("target %v, under %v", pl.target, pl.under)
	}
	pl.delTarget("a/b")
	if len(pl.target) != 0 || pl.hasUnder("a") {
		t.Fatalf("target %v, under %v", pl.target, pl.under)
	}
}
