package tree

import (
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

func gfile(p, content string) Entry {
	return Entry{Path: p, Kind: KindFile, Mode: 0o644, Size: int64(len(content)), Hash: Sum([]byte(content))}
}

func gdir(p string) Entry { return Entry{Path: p, Kind: KindDir, Mode: 0o755} }

func paths(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Path)
		if e.Kind == KindFile {
			b.WriteString("=" + e.Hash.String()[:4])
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

func TestGraft(t *testing.T) {
	live := []Entry{gdir("a"), gfile("a/keep", "k"), gfile("a/x", "new x"), gfile("a/y", "added later"), gfile("b", "b now"), gdir("c"), gfile("c/deep", "d")}
	cp := []Entry{gdir("a"), gfile("a/keep", "k-old"), gfile("a/x", "old x"), gfile("b", "b then"), gdir("gone"), gdir("gone/sub"), gfile("gone/sub/f", "f")}
	for _, tc := range []struct {
		name  string
		paths []string
		want  []Entry
	}{
		{"one file", []string{"a/x"}, []Entry{gdir("a"), gfile("a/keep", "k"), gfile("a/x", "old x"), gfile("a/y", "added later"), gfile("b", "b now"), gdir("c"), gfile("c/deep", "d")}},
		{"a file the checkpoint lacks is deleted", []string{"a/y"}, []Entry{gdir("a"), gfile("a/keep", "k"), gfile("a/x", "new x"), gfile("b", "b now"), gdir("c"), gfile("c/deep", "d")}},
		{"a directory, recursively", []string{"a"}, []Entry{gdir("a"), gfile("a/keep", "k-old"), gfile("a/x", "old x"), gfile("b", "b now"), gdir("c"), gfile("c/deep", "d")}},
		{"a directory the workspace lacks, with its parents", []string{"gone/sub/f"}, []Entry{gdir("a"), gfile("a/keep", "k"), gfile("a/x", "new x"), gfile("a/y", "added later"), gfile("b", "b now"), gdir("c"), gfile("c/deep", "d"), gdir("gone"), gdir("gone/sub"), gfile("gone/sub/f", "f")}},
		{"a directory the checkpoint lacks", []string{"c"}, []Entry{gdir("a"), gfile("a/keep", "k"), gfile("a/x", "new x"), gfile("a/y", "added later"), gfile("b", "b now")}},
		{"two paths, one inside the other, repeated", []string{"b", "a", "a/x", "b"}, []Entry{gdir("a"), gfile("a/keep", "k-old"), gfile("a/x", "old x"), gfile("b", "b then"), gdir("c"), gfile("c/deep", "d")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Graft(live, cp, tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			if paths(got) != paths(tc.want) {
				t.Fatalf("got  %s\nwant %s", paths(got), paths(tc.want))
			}
		})
	}
	// Restoring every top-level path is a full rollback.
	full, err := Graft(live, cp, []string{"a", "b", "c", "gone"})
	if err != nil || paths(full) != paths(cp) {
		t.Fatalf("every path: %s, %v", paths(full), err)
	}
	// Nothing of base outside the paths is touched: the same entries, field for field.
	got, _ := Graft(live, cp, []string{"b"})
	for _, e := range got {
		if e.Path != "b" && !containsSame(live, e) {
			t.Errorf("%s changed", e.Path)
		}
	}
}

func containsSame(es []Entry, e Entry) bool {
	for _, x := range es {
		if x.Same(e) {
			return true
		}
	}
	return false
}

func TestGraftRefuses(t *testing.T) {
	live := []Entry{gfile("a", "a file now"), gdir("d")}
	cp := []Entry{gdir("a"), gfile("a/inner", "i"), gdir("d")}
	if _, err := Graft(live, cp, []string{"nowhere"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a path in neither: %v", err)
	}
	if _, err := Graft(live, cp, []string{"a/inner"}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "restore a itself") {
		t.Errorf("a file where the checkpoint has a directory: %v", err)
	}
	if got, err := Graft(live, cp, []string{"a"}); err != nil || paths(got) != paths([]Entry{gdir("a"), gfile("a/inner", "i"), gdir("d")}) {
		t.Errorf("the file itself: %s, %v", paths(got), err)
	}
	for _, bad := range []string{"", "/abs", "../up", "a/../b", "a//b"} {
		if _, err := Graft(live, cp, []string{bad}); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
