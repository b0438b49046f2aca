package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/archive"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

const id3 = "00112233445566778899aabb"

// publish stages and publishes items as correction id's archive and returns the bytes of regular
// files it holds: the archived files' contents plus the manifest (symlinks hold no data).
func (f fixture) publish(t *testing.T, id string, items []port.ArchiveItem, contents ...string) int64 {
	t.Helper()
	if err := f.arch.Stage(context.Background(), id, items); err != nil {
		t.Fatal(err)
	}
	dir, err := f.arch.Publish(id)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, archive.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	n := fi.Size()
	for _, c := range contents {
		n += int64(len(c))
	}
	return n
}

// Usage counts what published archives hold, not staged ones or strays; Remove deletes one
// archive, returns what it held, and is a no-op for an archive that is already gone.
func TestUsageAndRemove(t *testing.T) {
	f := newFixture(t)
	if n, err := f.arch.Usage(); err != nil || n != 0 {
		t.Fatalf("Usage of an empty archive: %d, %v", n, err)
	}
	items := f.items(t)
	first := f.publish(t, id1, items[:1], "hello\n", "s3cret", "#!/bin/sh\necho hi\n")
	second := f.publish(t, id2, items[1:], "{}\n", "")
	// Neither a staged archive nor a stray file is a published archive.
	if err := f.arch.Stage(context.Background(), id3, items); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.layout.Archive(), "stray"), []byte("not an archive"), 0o600); err != nil {
		t.Fatal(err)
	}

	if n, err := f.arch.Usage(); err != nil || n != first+second {
		t.Fatalf("Usage = %d, %v; want %d + %d", n, err, first, second)
	}
	if n, err := f.arch.Remove(id1); err != nil || n != first {
		t.Fatalf("Remove = %d, %v; want %d", n, err, first)
	}
	if exists(f.arch.Dir(id1)) {
		t.Fatal("Remove left the archive")
	}
	if !exists(filepath.Join(f.arch.Dir(id2), archive.ManifestName)) || !exists(filepath.Join(f.staging(id3), archive.ManifestName)) {
		t.Fatal("Remove touched another archive")
	}
	if n, err := f.arch.Usage(); err != nil || n != second {
		t.Fatalf("Usage after Remove = %d, %v; want %d", n, err, second)
	}
	if n, err := f.arch.Remove(id1); err != nil || n != 0 {
		t.Fatalf("a second Remove = %d, %v; want 0, nil", n, err)
	}
	for _, id := range []string{"", "../x", id1 + "/.."} {
		_, err := f.arch.Remove(id)
		faulttest.Require(t, err, fault.ErrInvalid, "Remove "+id)
	}
}

func TestUsageWithoutArchiveDir(t *testing.T) {
	f := newFixture(t)
	if err := os.RemoveAll(f.layout.Archive()); err != nil {
		t.Fatal(err)
	}
	if n, err := f.arch.Usage(); err != nil || n != 0 {
		t.Fatalf("Usage without .plan/archive: %d, %v", n, err)
	}
}

// When .plan/archive is not a directory, Usage and Remove fail instead of reporting nothing held.
func TestUsageAndRemoveWhenArchiveIsNotADirectory(t *testing.T) {
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.State(), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Archive(), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := archive.New(l, objectstore.TestStore(t))
	if n, err := a.Usage(); err == nil {
		t.Errorf("Usage = %d, nil", n)
	}
	if n, err := a.Remove(id1); err == nil {
		t.Errorf("Remove = %d, nil", n)
	}
	if b, err := os.ReadFile(l.Archive()); err != nil || string(b) != "in the way" {
		t.Errorf("the file in the way was changed: %q, %v", b, err)
	}
}

// An artifact whose recorded hash does not match what the result tree holds is refused: the
// manifest must never describe content the archive does not hold.
func TestStageRefusesContentThatDoesNotMatchTheRecord(t *testing.T) {
	f := newFixture(t)
	root := f.build(t, map[string]spec{
		"file": file("actual", 0o644),
		"link": link("actual-target"),
	})
	for name, a := range map[string]artifact.Artifact{
		"file":    {Path: "file", Change: tree.Modified, Size: 6, SHA256: sha("recorded")},
		"symlink": {Path: "link", Change: tree.Added, Size: 13, SHA256: sha("recorded-target")},
	} {
		t.Run(name, func(t *testing.T) {
			items := []port.ArchiveItem{{DecisionID: "d", Attempt: 1, ResultTree: root, Artifacts: []artifact.Artifact{a}}}
			err := f.arch.Stage(context.Background(), id1, items)
			faulttest.Require(t, err, fault.ErrIntegrity, name)
			if exists(filepath.Join(f.staging(id1), archive.ManifestName)) {
				t.Fatal("a refused archive has a manifest")
			}
		})
	}
}

// Two records of one path would make one archived file stand for both: the second is refused,
// never written over the first.
func TestStageRefusesToOverwriteAnArchivedFile(t *testing.T) {
	f := newFixture(t)
	root := f.build(t, map[string]spec{"a.txt": file("a", 0o644)})
	items := []port.ArchiveItem{{DecisionID: "d", Attempt: 1, ResultTree: root, Artifacts: []artifact.Artifact{
		art("a.txt", tree.Added, "a"), art("a.txt", tree.Added, "a"),
	}}}
	if err := f.arch.Stage(context.Background(), id1, items); err == nil {
		t.Fatal("Stage archived one path twice")
	}
	if exists(filepath.Join(f.staging(id1), archive.ManifestName)) {
		t.Fatal("a refused archive has a manifest")
	}
}

// .plan/archive as a symbolic link to a place that is gone (a disk not mounted): staging fails
// instead of creating the archive somewhere else.
func TestStageWithTheArchiveDirGone(t *testing.T) {
	f := newFixture(t)
	if err := os.RemoveAll(f.layout.Archive()); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "unmounted", "archive")
	if err := os.Symlink(gone, f.layout.Archive()); err != nil {
		t.Fatal(err)
	}
	if err := f.arch.Stage(context.Background(), id1, f.items(t)); err == nil {
		t.Fatal("Stage succeeded without an archive directory")
	}
	if exists(filepath.Dir(gone)) {
		t.Fatal("Stage created the missing target of the archive link")
	}
}
