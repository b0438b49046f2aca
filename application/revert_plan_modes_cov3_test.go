package application

import (
	"testing"

	"github.com/planhq/plan/domain/tree"
)

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
