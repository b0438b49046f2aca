package treetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Fatalf(format string, args ...any) { f.msg = format }

func TestReadAndDiff(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "d", "e"), 0o755))
	must(os.MkdirAll(filepath.Join(root, ".plan"), 0o755))
	must(os.WriteFile(filepath.Join(root, ".plan", "x"), []byte("state"), 0o600))
	must(os.WriteFile(filepath.Join(root, "d", "f"), []byte("hi"), 0o640))
	must(os.Symlink("d/f", filepath.Join(root, "l")))
	must(os.WriteFile(filepath.Join(root, "skipped"), nil, 0o600))
	got, err := Read(root, map[string]bool{"skipped": true})
	must(err)
	want := []tree.Entry{
		{Path: "d", Kind: tree.KindDir, Mode: 0o755},
		{Path: "d/e", Kind: tree.KindDir, Mode: 0o755},
		{Path: "d/f", Kind: tree.KindFile, Mode: 0o640, Size: 2, Hash: tree.Sum([]byte("hi"))},
		{Path: "l", Kind: tree.KindSymlink, Mode: 0o777, Size: 3, Target: "d/f"},
	}
	if d := Diff(want, got); len(d) != 0 {
		t.Fatalf("Read: %v", d)
	}
	changed := append([]tree.Entry(nil), want...)
	changed[2].Hash = tree.Sum([]byte("ho"))
	changed[3].Target = "x"
	changed = append(changed[:1], changed[2:]...)
	d := Diff(changed, got)
	if len(d) != 3 || !strings.HasPrefix(d[0], "unexpected dir d/e") || !strings.HasPrefix(d[1], "want file d/f") || !strings.Contains(d[2], "symlink l -> x") {
		t.Fatalf("Diff: %q", d)
	}
	if s := Summary(make([]string, 20)); !strings.Contains(s, "and 5 more") {
		t.Fatalf("Summary: %q", s)
	}
	f := &fatal{TB: t}
	RequireSame(f, root, map[string]bool{"skipped": true}, changed, "ctx")
	if f.msg == "" {
		t.Fatal("RequireSame passed on a different tree")
	}
	f.msg = ""
	RequireSame(f, root, map[string]bool{"skipped": true}, want, "ctx")
	if f.msg != "" {
		t.Fatal("RequireSame failed on the same tree")
	}
	if _, err := Read(filepath.Join(root, "missing"), nil); err == nil {
		t.Fatal("a missing root was read")
	}
}
