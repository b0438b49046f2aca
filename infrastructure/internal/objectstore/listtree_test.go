package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// treeLister is a backend with a ListTree of its own: ListTree uses it.
type treeLister struct {
	Backend
	called bool
}

func (t *treeLister) ListTree(string) ([]FileInfo, error) {
	t.called = true
	return []FileInfo{{Name: "x"}}, nil
}

// listFails fails every List of dir.
type listFails struct {
	Backend
	dir string
}

func (l *listFails) List(dir string) ([]FileInfo, error) {
	if dir == l.dir {
		return nil, errors.New("injected")
	}
	return l.Backend.List(dir)
}

// ListTree lists every file at any depth, relative to the directory, through one List per
// directory when the backend has no listing of its own; a missing directory is empty, and a
// listing that fails fails it.
func TestListTree(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"records/a/0001", "records/a/pending/0002", "records/b/0003", "records/top"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDir(root, true)
	files, err := ListTree(d, "records")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if want := []string{"a/0001", "a/pending/0002", "b/0003", "top"}; !slices.Equal(names, want) {
		t.Fatalf("ListTree = %v, want %v", names, want)
	}
	if files, err := ListTree(d, "nothing"); err != nil || len(files) != 0 {
		t.Fatalf("a missing directory: %v, %v", files, err)
	}
	if _, err := ListTree(&listFails{Backend: d, dir: "records/a/pending"}, "records"); err == nil {
		t.Fatal("a failed listing was taken for an empty one")
	}
	tl := &treeLister{Backend: d}
	if files, err := ListTree(tl, "records"); err != nil || !tl.called || len(files) != 1 {
		t.Fatalf("a backend's own ListTree: %v, %v", files, err)
	}
}
