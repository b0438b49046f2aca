package correction

import (
	"slices"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// Directories the decision created inside one another all go when nothing lives under them any
// more: the deepest first, or the outer one would still hold the inner and be kept.
func TestPlanRevertDropsNestedDirectoriesTheDecisionCreated(t *testing.T) {
	f := newRevertFixture()
	f.result = []tree.Entry{dirEntry("out"), dirEntry("out/sub"), dirEntry("out/sub/deeper"), f.file("out/sub/deeper/f", "f\n", 0o644)}
	f.live = slices.Clone(f.result)
	p := f.plan(t, false)
	if len(p.Target) != 0 {
		t.Fatalf("target %v, want every directory the decision made gone", p.Target)
	}
	for path, a := range actions(p) {
		if a != RevertRestore {
			t.Errorf("%s: %s, want restore", path, a)
		}
	}

	// Later work in the outer directory keeps it, and only it.
	f.live = append(slices.Clone(f.result), f.file("out/later", "l\n", 0o644))
	p = f.plan(t, false)
	want := []tree.Entry{dirEntry("out"), f.file("out/later", "l\n", 0o644)}
	if !slices.EqualFunc(p.Target, want, func(a, b tree.Entry) bool { return a.Same(b) }) {
		t.Fatalf("target %v, want %v", p.Target, want)
	}
	if a := actions(p); a["out"] != RevertKeep || a["out/sub"] != RevertRestore || a["out/sub/deeper"] != RevertRestore {
		t.Errorf("actions %v", a)
	}
}

// A file the decision deleted cannot come back when later work replaced its directory with a
// file: that is a conflict, and the later file stays as it is.
func TestPlanRevertFileWhoseDirectoryWasReplacedByAFile(t *testing.T) {
	for _, markers := range []bool{false, true} {
		f := newRevertFixture()
		f.before = []tree.Entry{dirEntry("d"), f.file("d/f", "kept by the revert\n", 0o644)}
		f.result = []tree.Entry{dirEntry("d")}
		later := f.file("d", "later work\n", 0o644)
		f.live = []tree.Entry{later}
		p := f.plan(t, markers)
		c := p.Conflicts()
		if len(c) != 1 || c[0].Path != "d/f" || c[0].Why != "its directory was replaced since the decision" || c[0].Written != "" {
			t.Fatalf("markers=%v: conflicts %+v", markers, c)
		}
		if len(p.Target) != 1 || !p.Target[0].Same(later) {
			t.Fatalf("markers=%v: target %v, want the later file alone", markers, p.Target)
		}
	}
}

func dirMode(path string, mode uint32) tree.Entry {
	return tree.Entry{Path: path, Kind: tree.KindDir, Mode: mode}
}

// A directory holds no data but its mode. When the decision changed that mode, a surgical revert
// puts the mode from before back only when the directory is still as the decision left it; a mode
// later work set again wins, and one already back as before is kept as is.
func TestPlanRevertDirectoryModes(t *testing.T) {
	cases := []struct {
		name     string
		live     uint32
		want     uint32
		action   RevertAction
		whyMatch string
	}{
		{"as the decision left it", 0o700, 0o755, RevertRestore, ""},
		{"changed again since", 0o750, 0o750, RevertKeep, "changed again since the decision"},
		{"already as before", 0o755, 0o755, RevertKeep, "already as before the decision"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRevertFixture()
			inside := f.file("d/f", "f\n", 0o644)
			f.before = []tree.Entry{dirMode("d", 0o755), inside}
			f.result = []tree.Entry{dirMode("d", 0o700), inside}
			f.live = []tree.Entry{dirMode("d", tc.live), inside}
			p := f.plan(t, false)
			var got *RevertPath
			for i := range p.Paths {
				if p.Paths[i].Path == "d" {
					got = &p.Paths[i]
				}
			}
			if got == nil || got.Action != tc.action || got.Why != tc.whyMatch {
				t.Fatalf("the plan for d: %+v, want %s %q", got, tc.action, tc.whyMatch)
			}
			var mode uint32
			for _, e := range p.Target {
				if e.Path == "d" {
					mode = e.Mode
				}
			}
			if mode != tc.want {
				t.Errorf("d's mode after the revert %o, want %o (target %v)", mode, tc.want, p.Target)
			}
			if c, ok := f.content(t, p, "d/f"); !ok || c != "f\n" {
				t.Errorf("d/f, which the decision did not touch, is %q (%v)", c, ok)
			}
		})
	}
}
