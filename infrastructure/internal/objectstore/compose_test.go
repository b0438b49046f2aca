package objectstore

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

func TestStoreEntriesRoundTrip(t *testing.T) {
	s := TestStore(t)
	old := []byte("stored before\n")
	b := s.NewBatch()
	if _, err := b.PutBlob(bytes.NewReader(old), tree.Sum(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	merged := []byte("merged\n")
	entries := []tree.Entry{ // deliberately out of order
		{Path: "b/c/new.txt", Kind: tree.KindFile, Mode: 0o600, Size: int64(len(merged)), Hash: tree.Sum(merged)},
		{Path: "a.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(old)), Hash: tree.Sum(old)},
		{Path: "b", Kind: tree.KindDir, Mode: 0o755},
		{Path: "b/c", Kind: tree.KindDir, Mode: 0o700},
		{Path: "b/link", Kind: tree.KindSymlink, Mode: 0o777, Size: 5, Target: "a.txt"},
		{Path: "b-empty", Kind: tree.KindDir, Mode: 0o755},
	}
	root, err := s.StoreEntries(entries, map[tree.Hash][]byte{tree.Sum(merged): merged})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Flatten(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", "b", "b/c", "b/c/new.txt", "b/link", "b-empty"}
	if len(got) != len(want) {
		t.Fatalf("flatten: %v", got)
	}
	for i, e := range got {
		if e.Path != want[i] {
			t.Fatalf("entry %d is %q, want %q", i, e.Path, want[i])
		}
		for _, in := range entries {
			if in.Path == e.Path && in.Kind != tree.KindDir && !in.Same(e) {
				t.Fatalf("%s: stored %+v, gave %+v", e.Path, e, in)
			}
		}
	}
	r, err := s.OpenBlob(tree.Sum(merged))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	_ = r.Close()
	if !bytes.Equal(data, merged) {
		t.Fatalf("blob %q", data)
	}
	// The same entries give the same root: directory hashes are recomputed, never taken as given.
	again, err := s.StoreEntries(got, nil)
	if err != nil || again != root {
		t.Fatalf("restore of the flattened tree: %s, %v; want %s", again, err, root)
	}
}

func TestStoreEntriesRefuses(t *testing.T) {
	s := TestStore(t)
	missing := tree.Entry{Path: "x", Kind: tree.KindFile, Mode: 0o644, Size: 3, Hash: tree.Sum([]byte("abc"))}
	if _, err := s.StoreEntries([]tree.Entry{missing}, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a blob the store lacks: %v", err)
	}
	orphan := tree.Entry{Path: "d/x", Kind: tree.KindSymlink, Mode: 0o777, Target: "y"}
	if _, err := s.StoreEntries([]tree.Entry{orphan}, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a path under no directory: %v", err)
	}
	twice := tree.Entry{Path: "l", Kind: tree.KindSymlink, Mode: 0o777, Target: "y"}
	if _, err := s.StoreEntries([]tree.Entry{twice, twice}, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a path twice: %v", err)
	}
	bad := tree.Entry{Path: "../x", Kind: tree.KindSymlink, Mode: 0o777, Target: "y"}
	if _, err := s.StoreEntries([]tree.Entry{bad}, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a path that escapes: %v", err)
	}
}
