package correction

import (
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// A directory the decision created and later work chmod'ed is still the decision's: it goes when
// nothing lives under it, and stays (kept) when later work does.
func TestPlanRevertDirectoryCreatedByTheDecisionChmodedSince(t *testing.T) {
	f := newRevertFixture()
	f.result = []tree.Entry{dirEntry("out"), f.file("out/a", "a\n", 0o644)}
	f.live = []tree.Entry{{Path: "out", Kind: tree.KindDir, Mode: 0o700}, f.file("out/a", "a\n", 0o644)}
	p := f.plan(t, false)
	if len(p.Target) != 0 {
		t.Errorf("target %v, want the decision's directory gone", p.Target)
	}
	f.live = append(f.live, f.file("out/later", "l\n", 0o644))
	p = f.plan(t, false)
	if a := actions(p); a["out"] != RevertKeep || len(p.Target) != 2 {
		t.Errorf("actions %v, target %v", a, p.Target)
	}
}

// A file the revert brings back where the decision made a directory and later work added to it is
// a conflict: the directory stays; with markers the file is written beside it.
func TestPlanRevertFileShadowedByALaterDirectoryWithMarkers(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("out", "file\n", 0o644)}
	f.result = []tree.Entry{dirEntry("out"), f.file("out/a", "a\n", 0o644)}
	f.live = []tree.Entry{dirEntry("out"), f.file("out/a", "a\n", 0o644), f.file("out/b", "b\n", 0o644)}
	p := f.plan(t, true)
	c := p.Conflicts()
	if len(c) != 1 || c[0].Path != "out" || c[0].Written != "out.reverted" {
		t.Fatalf("conflicts %+v", c)
	}
	if got, ok := f.content(t, p, "out.reverted"); !ok || got != "file\n" {
		t.Errorf("out.reverted %q %v", got, ok)
	}
	if _, ok := f.content(t, p, "out/b"); !ok {
		t.Errorf("the later work under out is gone: %v", p.Target)
	}
}

// A revert needs the contents it merges; a store or workspace that cannot give them fails the
// plan, naming the path, rather than planning from a guess.
func TestPlanRevertReadFailures(t *testing.T) {
	f := newRevertFixture()
	before := f.file("f", "1\n2\n3\n", 0o644)
	result := f.file("f", "1\n2\nTHREE\n", 0o644)
	live := f.file("f", "ONE\n2\nTHREE\n", 0o644)
	in := func(readOld, readLive func(tree.Entry) ([]byte, error)) RevertInput {
		return RevertInput{
			Decision: "d", Changes: tree.Diff([]tree.Entry{before}, []tree.Entry{result}), Live: []tree.Entry{live},
			Pre: []tree.Entry{before}, ReadOld: readOld, ReadLive: readLive, Diff3: testDiff3,
		}
	}
	gone := errors.New("gone")
	read := func(e tree.Entry) ([]byte, error) { return f.blobs[e.Hash], nil }
	oldBut := func(h tree.Hash) func(tree.Entry) ([]byte, error) {
		return func(e tree.Entry) ([]byte, error) {
			if e.Hash == h {
				return nil, gone
			}
			return read(e)
		}
	}
	for _, c := range []struct {
		name string
		in   RevertInput
		want string
	}{
		{"before", in(oldBut(before.Hash), read), `read "f" as it was before the decision`},
		{"result", in(oldBut(result.Hash), read), `read "f" as the decision left it`},
		{"live", in(read, func(tree.Entry) ([]byte, error) { return nil, gone }), `read "f": gone`},
	} {
		_, err := PlanRevert(c.in)
		if !errors.Is(err, gone) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Readable, the same input merges.
	p, err := PlanRevert(in(read, read))
	if err != nil || actions(p)["f"] != RevertMerge {
		t.Fatalf("%v %v", p.Paths, err)
	}
	if got, _ := f.content(t, p, "f"); got != "ONE\n2\n3\n" {
		t.Errorf("merged %q", got)
	}
}
