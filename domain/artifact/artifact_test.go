package artifact_test

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/tree"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func file(p, content string) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: tree.Sum([]byte(content))}
}

func link(p, target string) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindSymlink, Mode: 0o777, Target: target}
}

func dir(p string) tree.Entry { return tree.Entry{Path: p, Kind: tree.KindDir, Mode: 0o755} }

// The real diff is the input FromChanges gets in production; building it with tree.Diff keeps the
// test honest about From/To and change types.
func TestFromChangesOfDiff(t *testing.T) {
	from := []tree.Entry{
		file("changed", "old content"),
		file("file-to-dir", "was a file"),
		file("file-to-link", "regular"),
		link("link", "old/target"),
		file("removed", "gone soon"),
		dir("removed-dir"),
		file("same", "unchanged"),
	}
	to := []tree.Entry{
		file("added", "brand new"),
		dir("added-dir"),
		file("changed", "new content!"),
		dir("file-to-dir"),
		link("file-to-link", "some/where"),
		link("link", "new/target/longer"),
		file("same", "unchanged"),
	}
	got := artifact.FromChanges(tree.Diff(from, to))
	want := []artifact.Artifact{
		{Path: "added", Change: tree.Added, Size: 9, SHA256: sha("brand new")},
		// An empty directory the decision created is an artifact: nothing else would record it.
		{Path: "added-dir", Change: tree.Added},
		{Path: "changed", Change: tree.Modified, Size: 12, SHA256: sha("new content!")},
		// A file that became a directory: what the decision produced there is not a file any more;
		// the directory, empty, is what it produced instead.
		{Path: "file-to-dir", Change: tree.Deleted, Size: 10, SHA256: sha("was a file")},
		{Path: "file-to-dir", Change: tree.Added},
		// Type changed to a symlink: reported with the new entry, hashed by its target text.
		{Path: "file-to-link", Change: tree.TypeChanged, SHA256: sha("some/where")},
		{Path: "link", Change: tree.Modified, SHA256: sha("new/target/longer")},
		{Path: "removed", Change: tree.Deleted, Size: 9, SHA256: sha("gone soon")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("artifacts:\n got %+v\nwant %+v", got, want)
	}
}

func TestFromChangesDirToFileIsAdded(t *testing.T) {
	changes := tree.Diff([]tree.Entry{dir("out")}, []tree.Entry{file("out", "now a file")})
	if len(changes) != 1 || changes[0].Type != tree.TypeChanged {
		t.Fatalf("setup: diff %+v", changes)
	}
	got := artifact.FromChanges(changes)
	want := []artifact.Artifact{{Path: "out", Change: tree.Added, Size: 10, SHA256: sha("now a file")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestFromChangesDirToSymlinkIsAdded(t *testing.T) {
	got := artifact.FromChanges(tree.Diff([]tree.Entry{dir("d")}, []tree.Entry{link("d", "elsewhere")}))
	want := []artifact.Artifact{{Path: "d", Change: tree.Added, SHA256: sha("elsewhere")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestFromChangesSymlinks(t *testing.T) {
	got := artifact.FromChanges([]tree.Change{
		{Path: "new-link", Type: tree.Added, To: ptr(link("new-link", "../target"))},
		{Path: "old-link", Type: tree.Deleted, From: ptr(link("old-link", "was/here"))},
	})
	want := []artifact.Artifact{
		{Path: "new-link", Change: tree.Added, SHA256: sha("../target")},
		{Path: "old-link", Change: tree.Deleted, SHA256: sha("was/here")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The hash is of the target text, never of the (zero) content hash.
	if got[0].SHA256 == tree.ZeroHash.String() {
		t.Fatal("symlink hashed as empty content")
	}
}

func TestFromChangesDirectoriesOnly(t *testing.T) {
	changes := tree.Diff([]tree.Entry{dir("gone")}, []tree.Entry{dir("new"), {Path: "new/sub", Kind: tree.KindDir, Mode: 0o700}})
	if len(changes) != 3 {
		t.Fatalf("setup: %d changes", len(changes))
	}
	// A removed directory and a new one with content are not artifacts; the new empty one at the
	// bottom is (what the decision created, and nothing else records).
	if got := artifact.FromChanges(changes); len(got) != 1 || got[0] != (artifact.Artifact{Path: "new/sub", Change: tree.Added}) {
		t.Fatalf("directories: %+v", got)
	}
	if got := artifact.FromChanges(nil); got != nil {
		t.Fatalf("no changes: %+v", got)
	}
}

func TestFromChangesModeOnlyChange(t *testing.T) {
	a := file("run.sh", "#!/bin/sh\n")
	b := a
	b.Mode = 0o755
	got := artifact.FromChanges(tree.Diff([]tree.Entry{a}, []tree.Entry{b}))
	want := []artifact.Artifact{{Path: "run.sh", Change: tree.Modified, Size: 10, SHA256: sha("#!/bin/sh\n")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func ptr(e tree.Entry) *tree.Entry { return &e }

// A new directory with content is implied by the paths below it; only an empty one is listed.
func TestFromChangesListsOnlyEmptyNewDirectories(t *testing.T) {
	got := artifact.FromChanges(tree.Diff(nil, []tree.Entry{dir("full"), dir("full/empty"), file("full/f", "x"), dir("solo")}))
	want := []artifact.Artifact{
		{Path: "full/empty", Change: tree.Added},
		{Path: "full/f", Change: tree.Added, Size: 1, SHA256: sha("x")},
		{Path: "solo", Change: tree.Added},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("artifacts:\n got %+v\nwant %+v", got, want)
	}
}
