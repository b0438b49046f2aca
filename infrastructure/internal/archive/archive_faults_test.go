package archive_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// An empty directory a decision created is archived as a directory (no content, no hash) and the
// manifest says it is one, so a restore from the archive can make it again.
func TestStageArchivesAnEmptyDirectory(t *testing.T) {
	f := newFixture(t)
	root := f.build(t, map[string]spec{"out/empty": {dir: true}, "out/f": file("x", 0o644)})
	items := []port.ArchiveItem{{DecisionID: "d", Attempt: 2, ResultTree: root, Artifacts: []artifact.Artifact{
		{Path: "out/empty", Change: tree.Added},
		art("out/f", tree.Added, "x"),
	}}}
	dir := filepath.Join(f.layout.Archive(), id1)
	f.publish(t, id1, items, "x")
	fi, err := os.Lstat(filepath.Join(dir, "d", "out", "empty"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("the empty directory was not archived as one: %v, %v", fi, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Decisions []struct {
			Attempt   int `json:"attempt"`
			Artifacts []struct {
				Path, Kind, SHA256 string
				ArchivedPath       string `json:"archived_path"`
			} `json:"artifacts"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	a := m.Decisions[0].Artifacts
	if m.Decisions[0].Attempt != 2 || len(a) != 2 || a[0].Kind != "dir" || a[0].ArchivedPath != "d/out/empty" || a[0].SHA256 != "" ||
		a[1].Kind != "" || a[1].ArchivedPath != "d/out/f" {
		t.Fatalf("manifest %s", b)
	}
}

// A staged or published archive that cannot be removed is an error: CleanStaged and Remove never
// report success (or bytes freed) for what is still on disk.
func TestRemovalFailuresAreReported(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.arch.Stage(ctx, id1, f.items(t)); err != nil {
		t.Fatal(err)
	}
	staged := f.staging(id1)
	testkit.Immutable(t, staged)
	if err := f.arch.CleanStaged(); err == nil {
		t.Fatal("CleanStaged succeeded with an archive it could not remove")
	}
	if !exists(filepath.Join(staged, "manifest.json")) {
		t.Fatal("the staged archive lost its manifest")
	}

	f.publish(t, id2, f.items(t))
	published := filepath.Join(f.layout.Archive(), id2)
	testkit.Immutable(t, published)
	if n, err := f.arch.Remove(id2); err == nil || n != 0 {
		t.Fatalf("Remove of an immutable archive: %d, %v", n, err)
	}
	if ok, err := f.arch.Has(id2); !ok || err != nil {
		t.Fatalf("the archive is still there, Has says %v, %v", ok, err)
	}
}

// Has tells "not published" from "cannot tell": a path it cannot examine is an error.
func TestHasWhenTheArchiveIsNotADirectory(t *testing.T) {
	f := newFixture(t)
	if err := os.RemoveAll(f.layout.Archive()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.layout.Archive(), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.arch.Has(id1); err == nil {
		t.Fatalf("Has = %v, nil", ok)
	}
}
