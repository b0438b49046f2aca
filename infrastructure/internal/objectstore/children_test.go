package objectstore

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// Children reads one directory of a tree: what Subtree lists, less what lies deeper than the
// path's direct content, without reading the trees below it.
func TestChildren(t *testing.T) {
	dir, root, _ := lazyFixture(t)
	s := openLazy(t, dir)
	paths := func(es []tree.Entry) string {
		var p []string
		for _, e := range es {
			p = append(p, e.Path)
		}
		return strings.Join(p, " ")
	}
	for path, want := range map[string]string{
		"":          "a top.txt",
		"a":         "a a/b a/g.txt",
		"a/b":       "a/b a/b/f.txt",
		"a/b/f.txt": "a/b/f.txt",
		"top.txt":   "top.txt",
	} {
		got, found, err := s.Children(root, path)
		if err != nil || !found || paths(got) != want {
			t.Fatalf("%q: %q, %v, %v; want %q", path, paths(got), found, err, want)
		}
		if path == "" {
			continue
		}
		deep, _, _ := s.Subtree(root, path)
		var direct []tree.Entry
		for _, e := range deep {
			if e.Path == path || !strings.Contains(strings.TrimPrefix(e.Path, path+"/"), "/") {
				direct = append(direct, e)
			}
		}
		if !slices.Equal(got, direct) {
			t.Fatalf("%q: %+v by Children, %+v of Subtree", path, got, direct)
		}
	}
	for _, missing := range []string{"nope", "a/nope", "top.txt/x"} {
		if got, found, err := s.Children(root, missing); err != nil || found || got != nil {
			t.Fatalf("%s: %+v, %v, %v", missing, got, found, err)
		}
	}
	if _, _, err := s.Children(tree.Sum([]byte("no such tree")), ""); err == nil {
		t.Fatal("a missing root read as a tree")
	}
	// A directory whose own tree cannot be read is an error, not an empty listing; what lies
	// below it is not read at all.
	full, _ := s.Flatten(root)
	var sub tree.Hash
	for _, e := range full {
		if e.Path == "a/b" {
			sub = e.Hash
		}
	}
	l, _ := s.lookup(sub)
	if err := os.Chmod(l.pack.path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.pack.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xee}, int(l.comp)), l.offset+1+32+2); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	damaged := openLazy(t, dir)
	if got, found, err := damaged.Children(root, "a"); err != nil || !found || paths(got) != "a a/b a/g.txt" {
		t.Fatalf("a, above the damage: %q, %v, %v", paths(got), found, err)
	}
	if _, _, err := damaged.Children(root, "a/b"); err == nil {
		t.Fatal("a damaged directory listed")
	}
}
