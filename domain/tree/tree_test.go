package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestCompareTable(t *testing.T) {
	// Each row must hold strictly less < greater.
	cases := []struct{ less, greater string }{
		{"a", "a/b"},
		{"a/b", "a-b"},
		{"a", "a-b"},
		{"a/b", "a/c"},
		{"a/b/c", "a/b-c"},
		{"a/z/z/z", "a0"},
		{"a/b", "a.b"}, // '.' (0x2e) sorts after the end of component "a"
		{"A", "a"},     // byte order, not case folding
		{"a/b", "aa"},  // component "a" ends before "aa"
		{"a/b", "a b"}, // bytewise "a b" < "a/b"; component-wise "a" < "a b"
		{"ab", "b"},    // first component decides
		{"x/y", "x/y/z"},
	}
	for _, c := range cases {
		if got := Compare(c.less, c.greater); got >= 0 {
			t.Errorf("Compare(%q, %q) = %d, want < 0", c.less, c.greater, got)
		}
		if got := Compare(c.greater, c.less); got <= 0 {
			t.Errorf("Compare(%q, %q) = %d, want > 0", c.greater, c.less, got)
		}
	}
	for _, p := range []string{"", "a", "a/b", "a-b/c/d"} {
		if got := Compare(p, p); got != 0 {
			t.Errorf("Compare(%q, %q) = %d, want 0", p, p, got)
		}
	}
	// The case plain string order gets wrong: "a b" < "a/b" bytewise, but "a" is a directory whose
	// contents come right after it, before its sibling "a b".
	if strings.Compare("a b", "a/b") >= 0 {
		t.Fatal("test premise: bytewise \"a b\" < \"a/b\"")
	}
}

// FuzzCompare checks Compare is a total order: reflexive only on equal strings, antisymmetric and
// transitive.
func FuzzCompare(f *testing.F) {
	f.Add("a", "a/b", "a-b")
	f.Add("a/b/c", "a/b-c", "a b")
	f.Add("", "/", "//")
	f.Add("x/", "x", "x/y")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ab, ba := Compare(a, b), Compare(b, a)
		if sign(ab) != -sign(ba) {
			t.Fatalf("not antisymmetric: Compare(%q,%q)=%d, Compare(%q,%q)=%d", a, b, ab, b, a, ba)
		}
		if (ab == 0) != (a == b) {
			t.Fatalf("Compare(%q,%q)=%d but equal=%v", a, b, ab, a == b)
		}
		bc, ac := Compare(b, c), Compare(a, c)
		if ab <= 0 && bc <= 0 && ac > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but Compare(a,c)=%d", a, b, c, ac)
		}
		// Component-wise order: a path sorts right after its directory's own entry and before
		// anything that extends the directory name.
		if ValidatePath(a) == nil {
			if Compare(a, a+"/x") >= 0 || Compare(a+"/x", a+"-") >= 0 {
				t.Fatalf("%q: directory contents not between the directory and its sibling %q", a, a+"-")
			}
		}
	})
}

// randomTree builds a random nested directory of names chosen to collide in interesting ways.
type dirNode map[string]dirNode // nil value: a file

func randomTree(r *rand.Rand, depth int) dirNode {
	names := []string{"a", "b", "a-b", "a.b", "a b", "ab", "A", "_", "z", "a0", "~"}
	d := dirNode{}
	for range r.IntN(6) {
		n := names[r.IntN(len(names))]
		if depth > 0 && r.IntN(2) == 0 {
			d[n] = randomTree(r, depth-1)
		} else {
			d[n] = nil
		}
	}
	return d
}

// flattenDepthFirst lists a tree the way a Merkle walk does: names in byte order, a directory
// before its contents.
func flattenDepthFirst(d dirNode, prefix string, out *[]string) {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := n
		if prefix != "" {
			p = prefix + "/" + n
		}
		*out = append(*out, p)
		if d[n] != nil {
			flattenDepthFirst(d[n], p, out)
		}
	}
}

func TestCompareMatchesDepthFirstOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var flat []string
		flattenDepthFirst(randomTree(r, 3), "", &flat)
		if !slices.IsSortedFunc(flat, Compare) {
			t.Fatalf("tree %d: depth-first listing is not sorted by Compare: %q", i, flat)
		}
		shuffled := slices.Clone(flat)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		slices.SortFunc(shuffled, Compare)
		if !slices.Equal(shuffled, flat) {
			t.Fatalf("tree %d: sorting by Compare gives %q, depth-first order is %q", i, shuffled, flat)
		}
	}
}

func TestValidatePath(t *testing.T) {
	long := strings.Repeat("a", 256)
	cases := []struct {
		path string
		ok   bool
	}{
		{"a", true},
		{"a/b/c", true},
		{"a-b.c/ d", true},
		{".hidden", true},
		{"..a", true},
		{"a..", true},
		{"a/...", true},
		{"", false},
		{"/", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"..", false},
		{"a/..", false},
		{"../a", false},
		{"a/../b", false},
		{"a/./b", false},
		{"./a", false},
		{"a\x00b", false},
		{long, false},
		{"a/" + long, false},
		{strings.Repeat("abcdefgh/", 600), false},
	}
	for _, c := range cases {
		err := ValidatePath(c.path)
		if (err == nil) != c.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", c.path, err, c.ok)
		}
		if err != nil && !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ValidatePath(%q) error %v is not fault.ErrInvalid", c.path, err)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "..", "a/../b", "/etc/passwd", "a//b", "a\x00", ".", "./a", "a/."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidatePath(p) != nil {
			return
		}
		if p == "" || p[0] == '/' || strings.HasSuffix(p, "/") {
			t.Fatalf("accepted %q: empty, absolute or trailing slash", p)
		}
		if strings.IndexByte(p, 0) >= 0 {
			t.Fatalf("accepted %q with a NUL byte", p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("accepted %q with component %q", p, c)
			}
		}
		if len(p) > 4096 {
			t.Fatalf("accepted a %d-byte path", len(p))
		}
	})
}

func TestValidateName(t *testing.T) {
	for _, n := range []string{"", ".", "..", "a/b", "a\x00", strings.Repeat("x", 256)} {
		if err := ValidateName(n); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalid", n, err)
		}
	}
	for _, n := range []string{"a", "...", ".a", strings.Repeat("x", 255)} {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
}

func TestModeRoundTrip(t *testing.T) {
	for u := uint32(0); u <= ModeMask; u++ {
		if got := UnixMode(GoMode(u)); got != u {
			t.Fatalf("UnixMode(GoMode(%#o)) = %#o", u, got)
		}
	}
	// Bits outside the mask are dropped.
	if got := GoMode(0o17777); got != GoMode(0o7777) {
		t.Errorf("GoMode(0o17777) = %v, want %v", got, GoMode(0o7777))
	}
	cases := []struct {
		m fs.FileMode
		u uint32
	}{
		{0o644, 0o644},
		{fs.ModeDir | 0o755, 0o755},
		{fs.ModeSymlink | 0o777, 0o777},
		{fs.ModeSetuid | 0o755, 0o4755},
		{fs.ModeSetgid | 0o2750&0o777, 0o2750},
		{fs.ModeSticky | fs.ModeDir | 0o777, 0o1777},
	}
	for _, c := range cases {
		if got := UnixMode(c.m); got != c.u {
			t.Errorf("UnixMode(%v) = %#o, want %#o", c.m, got, c.u)
		}
		if got := GoMode(c.u); got != c.m&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) {
			t.Errorf("GoMode(%#o) = %v, want the permission and special bits of %v", c.u, got, c.m)
		}
	}
}

func TestHash(t *testing.T) {
	h := Sum([]byte("hello"))
	const want = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if h.String() != want {
		t.Fatalf("Sum(hello) = %s", h)
	}
	p, err := ParseHash(want)
	if err != nil || p != h {
		t.Fatalf("ParseHash round trip: %v %v", p, err)
	}
	if h.IsZero() || !ZeroHash.IsZero() {
		t.Error("IsZero wrong")
	}
	for _, bad := range []string{"", want[:63], want + "0", strings.ToUpper(want), "g" + want[1:], want[:62] + " 0"} {
		if _, err := ParseHash(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseHash(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestKind(t *testing.T) {
	for k, s := range map[Kind]string{KindFile: "file", KindSymlink: "symlink", KindDir: "dir", 0: "kind(0)", 9: "kind(9)"} {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), s)
		}
		if k.Valid() != (k >= 1 && k <= 3) {
			t.Errorf("Kind(%d).Valid() = %v", k, k.Valid())
		}
	}
	// The stored numbering must never change.
	if KindFile != 1 || KindSymlink != 2 || KindDir != 3 {
		t.Fatal("kind numbering changed")
	}
}

func TestEntrySame(t *testing.T) {
	f := Entry{Path: "f", Kind: KindFile, Mode: 0o644, Size: 3, Hash: Sum([]byte("abc"))}
	l := Entry{Path: "l", Kind: KindSymlink, Mode: 0o777, Target: "f"}
	d := Entry{Path: "d", Kind: KindDir, Mode: 0o755, Hash: Sum([]byte("tree1"))}
	mod := func(e Entry, fn func(*Entry)) Entry { fn(&e); return e }
	cases := []struct {
		name string
		a, b Entry
		same bool
	}{
		{"identical file", f, f, true},
		{"file mode", f, mod(f, func(e *Entry) { e.Mode = 0o755 }), false},
		{"file content", f, mod(f, func(e *Entry) { e.Hash = Sum([]byte("abd")) }), false},
		{"file size", f, mod(f, func(e *Entry) { e.Size = 4 }), false},
		{"path", f, mod(f, func(e *Entry) { e.Path = "g" }), false},
		{"kind", f, mod(f, func(e *Entry) { e.Kind = KindDir }), false},
		{"symlink target", l, mod(l, func(e *Entry) { e.Target = "g" }), false},
		{"symlink mode ignored", l, mod(l, func(e *Entry) { e.Mode = 0o755 }), true},
		{"dir mode", d, mod(d, func(e *Entry) { e.Mode = 0o700 }), false},
		{"dir contents ignored", d, mod(d, func(e *Entry) { e.Hash = Sum([]byte("tree2")) }), true},
	}
	for _, c := range cases {
		if got := c.a.Same(c.b); got != c.same {
			t.Errorf("%s: Same = %v, want %v", c.name, got, c.same)
		}
	}
}

func file(p string, mode uint32, content string) Entry {
	return Entry{Path: p, Kind: KindFile, Mode: mode, Size: int64(len(content)), Hash: Sum([]byte(content))}
}

func dir(p string, mode uint32) Entry { return Entry{Path: p, Kind: KindDir, Mode: mode} }

func link(p, target string) Entry {
	return Entry{Path: p, Kind: KindSymlink, Mode: 0o777, Size: int64(len(target)), Target: target}
}

func summarize(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Type.Letter() + " " + c.Path
	}
	return out
}

func TestDiff(t *testing.T) {
	from := []Entry{
		file("a", 0o644, "a1"),
		dir("d", 0o755),
		file("d/keep", 0o644, "k"),
		file("d/mode", 0o644, "m"),
		dir("empty", 0o755),
		file("f2d", 0o644, "x"),
		link("l", "a"),
		dir("old", 0o755),
		file("old/x", 0o644, "x"),
		file("z", 0o644, "z"),
	}
	to := []Entry{
		file("a", 0o644, "a2"),
		file("a-b", 0o644, "new"),
		dir("d", 0o700),
		file("d/keep", 0o644, "k"),
		file("d/mode", 0o755, "m"),
		dir("f2d", 0o755),
		file("f2d/in", 0o644, "i"),
		link("l", "z"),
		dir("newdir", 0o755),
		file("z", 0o644, "z"),
	}
	got := Diff(from, to)
	want := []string{
		"M a", "A a-b", "M d", "M d/mode", "D empty", "T f2d", "A f2d/in", "M l", "A newdir", "D old", "D old/x",
	}
	if !slices.Equal(summarize(got), want) {
		t.Fatalf("Diff:\n got %q\nwant %q", summarize(got), want)
	}
	for _, c := range got {
		switch c.Type {
		case Added:
			if c.From != nil || c.To == nil || c.To.Path != c.Path {
				t.Errorf("%s: bad sides %+v", c.Path, c)
			}
		case Deleted:
			if c.To != nil || c.From == nil || c.From.Path != c.Path {
				t.Errorf("%s: bad sides %+v", c.Path, c)
			}
		default:
			if c.From == nil || c.To == nil {
				t.Errorf("%s: bad sides %+v", c.Path, c)
			}
		}
	}
	// Mode-only change of a file is a modification with the same content on both sides.
	for _, c := range got {
		if c.Path == "d/mode" && (c.Type != Modified || c.From.Hash != c.To.Hash || c.To.Mode != 0o755) {
			t.Errorf("d/mode: %+v", c)
		}
		if c.Path == "f2d" && (c.From.Kind != KindFile || c.To.Kind != KindDir) {
			t.Errorf("f2d: %+v", c)
		}
	}
	if d := Diff(from, from); len(d) != 0 {
		t.Errorf("Diff(x, x) = %q, want nothing", summarize(d))
	}
	if d := Diff(nil, to); len(d) != len(to) || d[0].Type != Added {
		t.Errorf("Diff(nil, to) = %q", summarize(d))
	}
	if d := Diff(from, nil); len(d) != len(from) || d[len(d)-1].Type != Deleted {
		t.Errorf("Diff(from, nil) = %q", summarize(d))
	}
	// Reversing the diff swaps added and deleted, keeps modified and type changes.
	back := Diff(to, from)
	if len(back) != len(got) {
		t.Fatalf("reverse diff has %d changes, forward %d", len(back), len(got))
	}
	rev := map[ChangeType]ChangeType{Added: Deleted, Deleted: Added, Modified: Modified, TypeChanged: TypeChanged}
	fwd := map[string]ChangeType{}
	for _, c := range got {
		fwd[c.Path] = c.Type
	}
	for _, c := range back {
		if fwd[c.Path] != rev[c.Type] {
			t.Errorf("%s: forward %s, backward %s", c.Path, fwd[c.Path], c.Type)
		}
	}
}

// TestDiffRandomApply applies a random diff to its source list and checks the result is the target
// list: every difference is reported exactly once, in order.
func TestDiffRandomApply(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	randomList := func() []Entry {
		var flat []string
		flattenDepthFirst(randomTree(r, 2), "", &flat)
		out := make([]Entry, 0, len(flat))
		for _, p := range flat {
			switch r.IntN(4) {
			case 0:
				out = append(out, file(p, []uint32{0o644, 0o755}[r.IntN(2)], fmt.Sprint(r.IntN(3))))
			case 1:
				out = append(out, link(p, fmt.Sprint(r.IntN(3))))
			default:
				out = append(out, dir(p, []uint32{0o755, 0o700}[r.IntN(2)]))
			}
		}
		return out
	}
	for i := range 300 {
		from, to := randomList(), randomList()
		changes := Diff(from, to)
		if !slices.IsSortedFunc(changes, func(a, b Change) int { return Compare(a.Path, b.Path) }) {
			t.Fatalf("case %d: changes not ordered", i)
		}
		m := map[string]Entry{}
		for _, e := range from {
			m[e.Path] = e
		}
		for _, c := range changes {
			if c.To == nil {
				delete(m, c.Path)
			} else {
				m[c.Path] = *c.To
			}
		}
		if len(m) != len(to) {
			t.Fatalf("case %d: applying the diff gives %d entries, want %d", i, len(m), len(to))
		}
		for _, e := range to {
			if got, ok := m[e.Path]; !ok || !got.Same(e) {
				t.Fatalf("case %d: %s: got %+v, want %+v", i, e.Path, got, e)
			}
		}
	}
}

func TestChangeTypeAndSize(t *testing.T) {
	for ct, l := range map[ChangeType]string{Added: "A", Modified: "M", Deleted: "D", TypeChanged: "T"} {
		if ct.Letter() != l {
			t.Errorf("%s.Letter() = %q, want %q", ct, ct.Letter(), l)
		}
	}
	a, b := file("f", 0o644, "123"), file("f", 0o644, "12345")
	if s := (Change{Type: Deleted, From: &a}).Size(); s != 3 {
		t.Errorf("deleted size %d", s)
	}
	if s := (Change{Type: Modified, From: &a, To: &b}).Size(); s != 5 {
		t.Errorf("modified size %d", s)
	}
}

// A hash travels as text in JSON (the journal, a correction's scope): hex, "" for none, and
// anything else refused.
func TestHashText(t *testing.T) {
	h := Sum([]byte("x"))
	type doc struct {
		H    Hash `json:"h"`
		None Hash `json:"none"`
	}
	b, err := json.Marshal(doc{H: h})
	if err != nil || string(b) != `{"h":"`+h.String()+`","none":""}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back doc
	if err := json.Unmarshal(b, &back); err != nil || back.H != h || !back.None.IsZero() {
		t.Fatalf("unmarshal: %+v, %v", back, err)
	}
	for _, bad := range []string{`{"h":"zz"}`, `{"h":"` + strings.ToUpper(h.String()) + `"}`} {
		if err := json.Unmarshal([]byte(bad), &back); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
