package correction

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

func TestMerge3(t *testing.T) {
	labels := MergeLabels{Ours: "live", Base: "after d", Theirs: "before d"}
	cases := []struct {
		name               string
		base, ours, theirs string
		want               string
		conflicted         bool
	}{
		{"only theirs changed", "a\nb\nc\n", "a\nb\nc\n", "A\nb\nc\n", "A\nb\nc\n", false},
		{"only ours changed", "a\nb\nc\n", "a\nb\nC\n", "a\nb\nc\n", "a\nb\nC\n", false},
		{"apart", "a\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", false},
		{"same change on both sides", "a\nb\n", "a\nB\n", "a\nB\n", "a\nB\n", false},
		{"no final newline kept", "a\nb\nc", "a\nb\nC", "A\nb\nc", "A\nb\nC", false},
		{"ours inserts, theirs edits elsewhere", "a\nb\nc\nd\n", "a\nb\nc\nd\nnew\n", "A\nb\nc\nd\n", "A\nb\nc\nd\nnew\n", false},
		{
			"overlap", "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n",
			"a\n<<<<<<< live\nX\n||||||| after d\nb\n=======\nY\n>>>>>>> before d\nc\n", true,
		},
		{
			"adjacent lines conflict", "a\nb\nc\n", "a\nB\nc\n", "A\nb\nc\n",
			"<<<<<<< live\na\nB\n||||||| after d\na\nb\n=======\nA\nb\n>>>>>>> before d\nc\n", true,
		},
		{
			"markers on their own lines", "x", "y", "z",
			"<<<<<<< live\ny\n||||||| after d\nx\n=======\nz\n>>>>>>> before d\n", true,
		},
		{"add/add from empty", "", "new\n", "old\n", "<<<<<<< live\nnew\n||||||| after d\n=======\nold\n>>>>>>> before d\n", true},
	}
	for _, c := range cases {
		got, conflicted := Merge3(testDiff3, []byte(c.base), []byte(c.ours), []byte(c.theirs), labels)
		if string(got) != c.want || conflicted != c.conflicted {
			t.Errorf("%s: Merge3 = %q, %v; want %q, %v", c.name, got, conflicted, c.want, c.conflicted)
		}
	}
}

func TestIsText(t *testing.T) {
	if !isText([]byte("plain\ntext\n")) || !isText(nil) || isText([]byte("a\x00b")) || isText(make([]byte, maxMergeBytes+1)) {
		t.Fatal("isText misjudges")
	}
}

// revertFixture is three trees (before the decision, its result, live) over an in-memory store.
type revertFixture struct {
	blobs                map[tree.Hash][]byte
	before, result, live []tree.Entry
}

func newRevertFixture() *revertFixture { return &revertFixture{blobs: map[tree.Hash][]byte{}} }

func (f *revertFixture) file(path, content string, mode uint32) tree.Entry {
	h := tree.Sum([]byte(content))
	f.blobs[h] = []byte(content)
	return tree.Entry{Path: path, Kind: tree.KindFile, Mode: mode, Size: int64(len(content)), Hash: h}
}

func dirEntry(path string) tree.Entry { return tree.Entry{Path: path, Kind: tree.KindDir, Mode: 0o755} }

func link(path, target string) tree.Entry {
	return tree.Entry{Path: path, Kind: tree.KindSymlink, Mode: 0o777, Size: int64(len(target)), Target: target}
}

func sorted(es ...tree.Entry) []tree.Entry {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out
}

func (f *revertFixture) plan(t *testing.T, markers bool) RevertPlan {
	t.Helper()
	read := func(e tree.Entry) ([]byte, error) {
		b, ok := f.blobs[e.Hash]
		if !ok {
			return nil, errors.New("no blob")
		}
		return b, nil
	}
	p, err := PlanRevert(RevertInput{
		Decision: "d", Changes: tree.Diff(sorted(f.before...), sorted(f.result...)), Live: sorted(f.live...),
		ReadLive: read, ReadOld: read, Markers: markers, Pre: sorted(f.before...), Diff3: testDiff3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *revertFixture) content(t *testing.T, p RevertPlan, path string) (string, bool) {
	t.Helper()
	for _, e := range p.Target {
		if e.Path != path {
			continue
		}
		if e.Kind != tree.KindFile {
			t.Fatalf("%s is a %s", path, e.Kind)
		}
		b, ok := p.Blobs[e.Hash]
		if !ok {
			b, ok = f.blobs[e.Hash]
		}
		if !ok || tree.Sum(b) != e.Hash || int64(len(b)) != e.Size {
			t.Fatalf("%s names content nobody holds", path)
		}
		return string(b), true
	}
	return "", false
}

func actions(p RevertPlan) map[string]RevertAction {
	out := map[string]RevertAction{}
	for _, x := range p.Paths {
		out[x.Path] = x.Action
	}
	return out
}

func TestPlanRevertRestoresWhatNothingTouchedSince(t *testing.T) {
	f := newRevertFixture()
	keep := f.file("keep.txt", "k\n", 0o644)
	f.before = []tree.Entry{keep, f.file("edited.txt", "old\n", 0o644), f.file("gone.txt", "g\n", 0o600)}
	f.result = []tree.Entry{keep, f.file("edited.txt", "new\n", 0o644), f.file("made.txt", "m\n", 0o644), dirEntry("newdir"), f.file("newdir/x", "x\n", 0o644)}
	f.live = append(slices.Clone(f.result), f.file("later.txt", "later\n", 0o644))
	p := f.plan(t, false)
	if got := actions(p); got["edited.txt"] != RevertRestore || got["gone.txt"] != RevertRestore || got["made.txt"] != RevertRestore || got["newdir"] != RevertRestore {
		t.Fatalf("actions: %v", got)
	}
	want := sorted(keep, f.file("edited.txt", "old\n", 0o644), f.file("gone.txt", "g\n", 0o600), f.file("later.txt", "later\n", 0o644))
	if !slices.EqualFunc(p.Target, want, func(a, b tree.Entry) bool { return a.Same(b) }) {
		t.Fatalf("target %v, want %v", p.Target, want)
	}
	if len(p.Conflicts()) != 0 || len(p.Blobs) != 0 {
		t.Fatalf("conflicts %v, blobs %d", p.Conflicts(), len(p.Blobs))
	}
}

func TestPlanRevertMergesLaterEdits(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("cfg", "a\nb\nc\nd\ne\n", 0o644)}
	f.result = []tree.Entry{f.file("cfg", "A\nb\nc\nd\ne\n", 0o644)}
	f.live = []tree.Entry{f.file("cfg", "A\nb\nc\nd\nE\n", 0o600)} // later: an edit and a chmod
	p := f.plan(t, false)
	if a := actions(p)["cfg"]; a != RevertMerge {
		t.Fatalf("cfg: %s", a)
	}
	if got, _ := f.content(t, p, "cfg"); got != "a\nb\nc\nd\nE\n" {
		t.Fatalf("merged %q", got)
	}
	if p.Target[0].Mode != 0o600 {
		t.Fatalf("the later mode is lost: %o", p.Target[0].Mode)
	}
}

func TestPlanRevertModeOnlyDecision(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("run.sh", "echo\n", 0o644)}
	f.result = []tree.Entry{f.file("run.sh", "echo\n", 0o755)}
	f.live = []tree.Entry{f.file("run.sh", "echo hi\n", 0o755)}
	p := f.plan(t, false)
	got, _ := f.content(t, p, "run.sh")
	if got != "echo hi\n" || p.Target[0].Mode != 0o644 {
		t.Fatalf("run.sh = %q %o; want the later content with the mode from before", got, p.Target[0].Mode)
	}
}

func TestPlanRevertOverlapRefusedOrMarked(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("cfg", "a\nb\nc\n", 0o644)}
	f.result = []tree.Entry{f.file("cfg", "a\nB\nc\n", 0o644)}
	f.live = []tree.Entry{f.file("cfg", "a\nBB\nc\n", 0o644)}
	p := f.plan(t, false)
	if c := p.Conflicts(); len(c) != 1 || c[0].Path != "cfg" || c[0].Written != "" {
		t.Fatalf("conflicts %v", c)
	}
	if got, _ := f.content(t, p, "cfg"); got != "a\nBB\nc\n" {
		t.Fatalf("refused plan changed cfg: %q", got)
	}
	p = f.plan(t, true)
	if c := p.Conflicts(); len(c) != 1 || c[0].Written != "cfg" {
		t.Fatalf("conflicts %v", c)
	}
	want := "a\n<<<<<<< live\nBB\n||||||| after d\nB\n=======\nb\n>>>>>>> before d\nc\n"
	if got, _ := f.content(t, p, "cfg"); got != want {
		t.Fatalf("markers %q", got)
	}
}

func TestPlanRevertBinaryConflict(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("img", "\x00one", 0o644)}
	f.result = []tree.Entry{f.file("img", "\x00two", 0o644)}
	f.live = []tree.Entry{f.file("img", "\x00three", 0o644)}
	p := f.plan(t, true)
	c := p.Conflicts()
	if len(c) != 1 || c[0].Why != "binary file changed since the decision" || c[0].Written != "img.reverted" {
		t.Fatalf("conflicts %v", c)
	}
	if got, _ := f.content(t, p, "img"); got != "\x00three" {
		t.Fatalf("img %q", got)
	}
	if got, ok := f.content(t, p, "img.reverted"); !ok || got != "\x00one" {
		t.Fatalf("img.reverted %q %v", got, ok)
	}
	if len(p.Blobs) != 0 {
		t.Fatal("the pre-state is stored already; nothing new to store")
	}
}

func TestPlanRevertDeletedThenRecreated(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("notes", "old\n", 0o644), f.file("same", "s\n", 0o644)}
	f.result = nil
	f.live = []tree.Entry{f.file("notes", "new\n", 0o644), f.file("same", "s\n", 0o644)}
	p := f.plan(t, false)
	a := actions(p)
	if a["notes"] != RevertConflict || a["same"] != RevertKeep {
		t.Fatalf("actions %v", a)
	}
	p = f.plan(t, true)
	if got, _ := f.content(t, p, "notes"); got != "<<<<<<< live\nnew\n||||||| after d\n=======\nold\n>>>>>>> before d\n" {
		t.Fatalf("notes %q", got)
	}
}

func TestPlanRevertCreatedAndChangedSince(t *testing.T) {
	f := newRevertFixture()
	f.result = []tree.Entry{f.file("made", "m\n", 0o644)}
	f.live = []tree.Entry{f.file("made", "m2\n", 0o644)}
	p := f.plan(t, true)
	if c := p.Conflicts(); len(c) != 1 || c[0].Why != "created by the decision and changed since" || c[0].Written != "" {
		t.Fatalf("conflicts %v", c)
	}
	if got, _ := f.content(t, p, "made"); got != "m2\n" {
		t.Fatalf("made %q", got)
	}
}

func TestPlanRevertDeletedSince(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{dirEntry("d"), f.file("d/f", "old\n", 0o644)}
	f.result = []tree.Entry{dirEntry("d"), f.file("d/f", "new\n", 0o644)}
	f.live = nil // later work deleted the whole directory
	p := f.plan(t, false)
	if c := p.Conflicts(); len(c) != 1 || c[0].Path != "d/f" || c[0].Why != "deleted since the decision" {
		t.Fatalf("conflicts %v", c)
	}
	p = f.plan(t, true)
	if got, ok := f.content(t, p, "d/f.reverted"); !ok || got != "old\n" {
		t.Fatalf("d/f.reverted %q %v", got, ok)
	}
	if _, ok := f.content(t, p, "d/f"); ok {
		t.Fatal("d/f came back")
	}
	if p.Target[0].Path != "d" || p.Target[0].Kind != tree.KindDir {
		t.Fatalf("the directory of d/f.reverted: %v", p.Target)
	}
}

func TestPlanRevertSymlinkChangedSince(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{link("l", "a")}
	f.result = []tree.Entry{link("l", "b")}
	f.live = []tree.Entry{link("l", "c")}
	if c := f.plan(t, false).Conflicts(); len(c) != 1 || c[0].Why != "a symlink changed since the decision" {
		t.Fatalf("conflicts %v", c)
	}
	f.live = []tree.Entry{link("l", "b")}
	p := f.plan(t, false)
	if len(p.Target) != 1 || p.Target[0].Target != "a" {
		t.Fatalf("target %v", p.Target)
	}
}

func TestPlanRevertKeepsDirectoryHoldingLaterWork(t *testing.T) {
	f := newRevertFixture()
	f.result = []tree.Entry{dirEntry("gen"), f.file("gen/a", "a\n", 0o644)}
	f.live = []tree.Entry{dirEntry("gen"), f.file("gen/a", "a\n", 0o644), f.file("gen/later", "l\n", 0o644)}
	p := f.plan(t, false)
	a := actions(p)
	if a["gen"] != RevertKeep || a["gen/a"] != RevertRestore {
		t.Fatalf("actions %v", a)
	}
	if len(p.Target) != 2 || p.Target[0].Path != "gen" || p.Target[1].Path != "gen/later" {
		t.Fatalf("target %v", p.Target)
	}
}

func TestPlanRevertFileCannotReplaceDirectoryHoldingLaterWork(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("out", "file\n", 0o644)}
	f.result = []tree.Entry{dirEntry("out"), f.file("out/a", "a\n", 0o644)}
	f.live = []tree.Entry{dirEntry("out"), f.file("out/a", "a\n", 0o644), f.file("out/b", "b\n", 0o644)}
	p := f.plan(t, false)
	if c := p.Conflicts(); len(c) != 1 || c[0].Path != "out" {
		t.Fatalf("conflicts %v", c)
	}
	for _, e := range p.Target {
		if e.Path == "out" && e.Kind != tree.KindDir {
			t.Fatalf("out became a %s", e.Kind)
		}
	}
	f.live = f.result // nothing since: the file comes back
	p = f.plan(t, false)
	if got, ok := f.content(t, p, "out"); !ok || got != "file\n" || len(p.Target) != 1 {
		t.Fatalf("out %q, target %v", got, p.Target)
	}
}

func TestPlanRevertKindChangedSince(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("x", "1\n", 0o644)}
	f.result = []tree.Entry{f.file("x", "2\n", 0o644)}
	f.live = []tree.Entry{link("x", "elsewhere")}
	if c := f.plan(t, false).Conflicts(); len(c) != 1 {
		t.Fatalf("conflicts %v", c)
	}
	f.live = []tree.Entry{dirEntry("x"), f.file("x/y", "y\n", 0o644)}
	if c := f.plan(t, true).Conflicts(); len(c) != 1 || c[0].Why != "its kind changed since the decision" {
		t.Fatalf("conflicts %v", c)
	}
}

func TestPlanRevertDirectories(t *testing.T) {
	f := newRevertFixture()
	tight := tree.Entry{Path: "d", Kind: tree.KindDir, Mode: 0o700}
	f.before = []tree.Entry{dirEntry("d"), dirEntry("gone"), f.file("gone/x", "x\n", 0o644)}
	f.result = []tree.Entry{tight}
	f.live = []tree.Entry{tight}
	p := f.plan(t, false)
	if a := actions(p); a["d"] != RevertRestore || a["gone"] != RevertRestore || a["gone/x"] != RevertRestore {
		t.Fatalf("actions %v", a)
	}
	want := sorted(dirEntry("d"), dirEntry("gone"), f.file("gone/x", "x\n", 0o644))
	if !slices.EqualFunc(p.Target, want, func(a, b tree.Entry) bool { return a.Same(b) }) {
		t.Fatalf("target %v", p.Target)
	}
	f.live = []tree.Entry{{Path: "d", Kind: tree.KindDir, Mode: 0o750}} // chmod'ed again since
	if a := actions(f.plan(t, false)); a["d"] != RevertKeep {
		t.Fatalf("actions %v", a)
	}
}

func TestPlanRevertParents(t *testing.T) {
	f := newRevertFixture()
	deep := tree.Entry{Path: "a", Kind: tree.KindDir, Mode: 0o711}
	f.before = []tree.Entry{deep, dirEntry("a/b"), f.file("a/b/c", "c\n", 0o644)}
	f.result = []tree.Entry{deep, dirEntry("a/b"), f.file("a/b/c", "C\n", 0o644)}
	// Later work deleted a/b/c and a/b; the conflict's PATH.reverted needs a/b back.
	f.live = []tree.Entry{deep}
	p := f.plan(t, true)
	if got, ok := f.content(t, p, "a/b/c.reverted"); !ok || got != "c\n" {
		t.Fatalf("a/b/c.reverted %q %v", got, ok)
	}
	// Later work replaced the directory a/b with a file: what the decision deleted under it cannot
	// come back.
	f.before = []tree.Entry{dirEntry("a"), f.file("a/keep", "k\n", 0o644), dirEntry("a/b"), f.file("a/b/x", "x\n", 0o644)}
	f.result = []tree.Entry{dirEntry("a"), f.file("a/keep", "k\n", 0o644), dirEntry("a/b")}
	f.live = []tree.Entry{dirEntry("a"), f.file("a/b", "now a file\n", 0o644), f.file("a/keep", "k\n", 0o644)}
	p = f.plan(t, false)
	if c := p.Conflicts(); len(c) != 1 || c[0].Path != "a/b/x" || c[0].Why != "its directory was replaced since the decision" {
		t.Fatalf("conflicts %v", c)
	}
	if got, _ := f.content(t, p, "a/b"); got != "now a file\n" {
		t.Fatalf("a/b %q", got)
	}
}

func TestPlanRevertBesideNameTaken(t *testing.T) {
	f := newRevertFixture()
	f.before = []tree.Entry{f.file("bin", "\x00a", 0o644)}
	f.result = []tree.Entry{f.file("bin", "\x00b", 0o644)}
	f.live = []tree.Entry{f.file("bin", "\x00c", 0o644), f.file("bin.reverted", "mine\n", 0o644)}
	p := f.plan(t, true)
	if c := p.Conflicts(); len(c) != 1 || c[0].Written != "bin.reverted.1" {
		t.Fatalf("conflicts %v", c)
	}
	if got, _ := f.content(t, p, "bin.reverted"); got != "mine\n" {
		t.Fatalf("the user's bin.reverted was overwritten: %q", got)
	}
}

// TestMerge3Property checks the merge against a model on random files of unique lines (so the line
// diff is unambiguous): each side replaces, inserts after or deletes some lines; when no line one
// side touched is within one line of one the other side touched, the merge is clean and equals both
// edits applied; otherwise it is a conflict (diff3 takes touching changes as one region).
func TestMerge3Property(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 3))
	clean, conflicts := 0, 0
	for trial := range 3000 {
		n := 3 + r.IntN(12)
		base := make([]string, n)
		for i := range base {
			base[i] = fmt.Sprintf("base %d\n", i)
		}
		edit := func(side string) map[int]string {
			e := map[int]string{} // line → replacement ("" deletes it; "+text" inserts text after it)
			for range 1 + r.IntN(2) {
				i := r.IntN(n)
				switch r.IntN(3) {
				case 0:
					e[i] = fmt.Sprintf("%s %d\n", side, i)
				case 1:
					e[i] = ""
				default:
					e[i] = fmt.Sprintf("+inserted by %s after %d\n", side, i)
				}
			}
			return e
		}
		apply := func(edits ...map[int]string) string {
			var b strings.Builder
			for i, l := range base {
				keep, extra := l, ""
				for _, e := range edits {
					if x, ok := e[i]; ok {
						switch {
						case x == "":
							keep = ""
						case strings.HasPrefix(x, "+"):
							extra = x[1:]
						default:
							keep = x
						}
					}
				}
				b.WriteString(keep + extra)
			}
			return b.String()
		}
		ours, theirs := edit("ours"), edit("theirs")
		touching := false
		for i := range ours {
			for j := range theirs {
				if i-j <= 1 && j-i <= 1 {
					touching = true
				}
			}
		}
		b := strings.Join(base, "")
		got, conflicted := Merge3(testDiff3, []byte(b), []byte(apply(ours)), []byte(apply(theirs)), MergeLabels{"o", "b", "t"})
		if touching {
			conflicts++
			if !conflicted && string(got) != apply(ours, theirs) {
				t.Fatalf("trial %d: touching edits %v %v merged to %q", trial, ours, theirs, got)
			}
			continue
		}
		clean++
		if conflicted || string(got) != apply(ours, theirs) {
			t.Fatalf("trial %d: edits %v and %v: merge %q (conflicted %v), want %q", trial, ours, theirs, got, conflicted, apply(ours, theirs))
		}
	}
	t.Logf("%d clean merges, %d touching", clean, conflicts)
}
