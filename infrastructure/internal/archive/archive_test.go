package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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

const (
	id1 = "0123456789abcdef01234567"
	id2 = "fedcba9876543210fedcba98"
)

// spec is one path of a result tree to build.
type spec struct {
	content string
	mode    uint32
	target  string // symlink when set
	dir     bool   // an (empty unless it has children) directory
}

func file(content string, mode uint32) spec { return spec{content: content, mode: mode} }
func link(target string) spec               { return spec{target: target} }

type fixture struct {
	layout workspace.Layout
	store  *objectstore.Store
	arch   *archive.Archive
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	s := objectstore.TestStore(t)
	return fixture{layout: l, store: s, arch: archive.New(l, s)}
}

// build stores a tree holding paths (and the directories leading to them) and returns its hash.
func (f fixture) build(t *testing.T, paths map[string]spec) tree.Hash {
	t.Helper()
	b := f.store.NewBatch()
	h := buildDir(t, b, "", paths)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return h
}

func buildDir(t *testing.T, b *objectstore.Batch, prefix string, paths map[string]spec) tree.Hash {
	t.Helper()
	children := map[string]bool{} // name → is a directory
	for p, s := range paths {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, deeper := strings.Cut(rest, "/")
		children[name] = children[name] || deeper || s.dir
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	slices.Sort(names)
	var tr objectstore.Tree
	for _, n := range names {
		full := prefix + n
		switch s, ok := paths[full]; {
		case children[n]:
			tr = append(tr, objectstore.TreeEntry{Name: n, Kind: tree.KindDir, Mode: 0o755, Hash: buildDir(t, b, full+"/", paths)})
		case !ok:
			t.Fatalf("no spec for %s", full)
		case s.target != "":
			tr = append(tr, objectstore.TreeEntry{Name: n, Kind: tree.KindSymlink, Mode: 0o777, Target: s.target})
		default:
			h := tree.Sum([]byte(s.content))
			if _, err := b.PutBlob(strings.NewReader(s.content), h, int64(len(s.content))); err != nil {
				t.Fatal(err)
			}
			tr = append(tr, objectstore.TreeEntry{Name: n, Kind: tree.KindFile, Mode: s.mode, Size: int64(len(s.content)), Hash: h})
		}
	}
	h, _, err := b.PutTree(tr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sha(s string) string { return tree.Sum([]byte(s)).String() }

func art(p string, ch tree.ChangeType, content string) artifact.Artifact {
	return artifact.Artifact{Path: p, Change: ch, Size: int64(len(content)), SHA256: sha(content)}
}

func (f fixture) staging(id string) string { return filepath.Join(f.layout.Archive(), ".staging-"+id) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// items builds the archive of two reverted decisions.
func (f fixture) items(t *testing.T) []port.ArchiveItem {
	t.Helper()
	treeA := f.build(t, map[string]spec{
		"README.md":       file("hello\n", 0o644),
		"out/run.sh":      file("#!/bin/sh\necho hi\n", 0o755),
		"out/deep/secret": file("s3cret", 0o600),
		"link":            link("out/run.sh"),
		"escape":          link("../../../../etc/passwd"),
		"unrelated.txt":   file("not an artifact", 0o644),
	})
	treeB := f.build(t, map[string]spec{
		"data.json": file("{}\n", 0o640),
		"empty":     file("", 0o644),
	})
	return []port.ArchiveItem{
		{DecisionID: "gen", Attempt: 2, ResultTree: treeA, Artifacts: []artifact.Artifact{
			art("README.md", tree.Modified, "hello\n"),
			art("escape", tree.Added, "../../../../etc/passwd"),
			art("link", tree.TypeChanged, "out/run.sh"),
			art("old.txt", tree.Deleted, "was here"),
			art("out/deep/secret", tree.Added, "s3cret"),
			art("out/run.sh", tree.Added, "#!/bin/sh\necho hi\n"),
		}},
		{DecisionID: "post", Attempt: 1, ResultTree: treeB, Artifacts: []artifact.Artifact{
			art("data.json", tree.Modified, "{}\n"),
			art("empty", tree.Added, ""),
		}},
	}
}

func TestStageWritesEveryArtifact(t *testing.T) {
	f := newFixture(t)
	if err := f.arch.Stage(context.Background(), id1, f.items(t)); err != nil {
		t.Fatal(err)
	}
	dir := f.staging(id1)
	if exists(f.arch.Dir(id1)) {
		t.Fatal("Stage published the archive")
	}
	files := map[string]struct {
		content string
		mode    fs.FileMode
	}{
		"gen/README.md":       {"hello\n", 0o644},
		"gen/out/run.sh":      {"#!/bin/sh\necho hi\n", 0o755},
		"gen/out/deep/secret": {"s3cret", 0o600},
		"post/data.json":      {"{}\n", 0o640},
		"post/empty":          {"", 0o644},
	}
	for p, want := range files {
		full := filepath.Join(dir, p)
		st, err := os.Lstat(full)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !st.Mode().IsRegular() || st.Mode().Perm() != want.mode {
			t.Errorf("%s: mode %v, want regular %v", p, st.Mode(), want.mode)
		}
		b, err := os.ReadFile(full)
		if err != nil || string(b) != want.content {
			t.Errorf("%s: content %q, %v; want %q", p, b, err, want.content)
		}
	}
	for p, target := range map[string]string{"gen/link": "out/run.sh", "gen/escape": "../../../../etc/passwd"} {
		got, err := os.Readlink(filepath.Join(dir, p))
		if err != nil || got != target {
			t.Errorf("%s: symlink to %q, %v; want %q", p, got, err, target)
		}
	}
	for _, p := range []string{"gen/old.txt", "gen/unrelated.txt"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s must not be archived", p)
		}
	}

	raw, err := os.ReadFile(filepath.Join(dir, archive.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := archive.Manifest{CorrectionID: id1, Decisions: []archive.ManifestDecision{
		{DecisionID: "gen", Attempt: 2, Artifacts: []archive.ManifestArtifact{
			{Path: "README.md", Change: "modified", Size: 6, SHA256: sha("hello\n"), ArchivedPath: "gen/README.md"},
			{Path: "escape", Change: "added", Size: 22, SHA256: sha("../../../../etc/passwd"), ArchivedPath: "gen/escape"},
			{Path: "link", Change: "type_changed", Size: 10, SHA256: sha("out/run.sh"), ArchivedPath: "gen/link"},
			{Path: "old.txt", Change: "deleted", Size: 8, SHA256: sha("was here")},
			{Path: "out/deep/secret", Change: "added", Size: 6, SHA256: sha("s3cret"), ArchivedPath: "gen/out/deep/secret"},
			{Path: "out/run.sh", Change: "added", Size: 18, SHA256: sha("#!/bin/sh\necho hi\n"), ArchivedPath: "gen/out/run.sh"},
		}},
		{DecisionID: "post", Attempt: 1, Artifacts: []archive.ManifestArtifact{
			{Path: "data.json", Change: "modified", Size: 3, SHA256: sha("{}\n"), ArchivedPath: "post/data.json"},
			{Path: "empty", Change: "added", SHA256: sha(""), ArchivedPath: "post/empty"},
		}},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("manifest:\n got %+v\nwant %+v", m, want)
	}
	// The contract: archived_path is absent (not empty) for deletions.
	var generic struct {
		Decisions []struct {
			Artifacts []map[string]any `json:"artifacts"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, a := range generic.Decisions[0].Artifacts {
		_, has := a["archived_path"]
		if has != (a["change"] != "deleted") {
			t.Errorf("artifact %v: archived_path present = %v", a["path"], has)
		}
		for _, k := range []string{"path", "change", "size", "sha256"} {
			if _, ok := a[k]; !ok {
				t.Errorf("artifact %v lacks %q", a["path"], k)
			}
		}
	}
	// Every archived file's content hashes to the manifest's sha256.
	for _, d := range m.Decisions {
		for _, a := range d.Artifacts {
			if a.ArchivedPath == "" {
				continue
			}
			full := filepath.Join(dir, filepath.FromSlash(a.ArchivedPath))
			var content []byte
			if target, err := os.Readlink(full); err == nil {
				content = []byte(target)
			} else if content, err = os.ReadFile(full); err != nil {
				t.Fatal(err)
			}
			if got := tree.Sum(content).String(); got != a.SHA256 {
				t.Errorf("%s: archived content hashes to %s, manifest says %s", a.ArchivedPath, got, a.SHA256)
			}
		}
	}
}

func TestStageEmptyManifest(t *testing.T) {
	f := newFixture(t)
	if err := f.arch.Stage(context.Background(), id1, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(f.staging(id1), archive.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"decisions": []`)) {
		t.Fatalf("an empty archive's manifest must list no decisions as [], not null: %s", raw)
	}
}

func TestStageReplacesEarlierStaging(t *testing.T) {
	f := newFixture(t)
	items := f.items(t)
	if err := f.arch.Stage(context.Background(), id1, items); err != nil {
		t.Fatal(err)
	}
	if err := f.arch.Stage(context.Background(), id1, items[1:]); err != nil {
		t.Fatalf("staging again: %v", err)
	}
	if exists(filepath.Join(f.staging(id1), "gen")) {
		t.Fatal("a re-staged archive kept the previous staging's files")
	}
	if !exists(filepath.Join(f.staging(id1), "post", "data.json")) {
		t.Fatal("re-staged archive incomplete")
	}
}

func TestPublish(t *testing.T) {
	f := newFixture(t)
	if err := f.arch.Stage(context.Background(), id1, f.items(t)); err != nil {
		t.Fatal(err)
	}
	final, err := f.arch.Publish(id1)
	if err != nil {
		t.Fatal(err)
	}
	if final != f.arch.Dir(id1) || final != filepath.Join(f.layout.State(), "archive", id1) {
		t.Fatalf("published at %s", final)
	}
	if exists(f.staging(id1)) {
		t.Fatal("staging left behind after Publish")
	}
	for _, p := range []string{archive.ManifestName, "gen/out/run.sh", "post/data.json", "gen/link"} {
		if !exists(filepath.Join(final, p)) {
			t.Errorf("%s missing from the published archive", p)
		}
	}
	again, err := f.arch.Publish(id1)
	if err != nil || again != final {
		t.Fatalf("second Publish: %q, %v", again, err)
	}
	if !exists(filepath.Join(final, archive.ManifestName)) {
		t.Fatal("second Publish damaged the archive")
	}
}

func TestPublishWithoutStage(t *testing.T) {
	f := newFixture(t)
	_, err := f.arch.Publish(id2)
	faulttest.Require(t, err, fault.ErrIntegrity, "publish unstaged")
	if exists(f.arch.Dir(id2)) {
		t.Fatal("Publish created an archive out of nothing")
	}
}

func TestUnpublishThenCleanStaged(t *testing.T) {
	f := newFixture(t)
	items := f.items(t)
	for _, id := range []string{id1, id2} {
		if err := f.arch.Stage(context.Background(), id, items); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.arch.Publish(id1); err != nil {
		t.Fatal(err)
	}
	if err := f.arch.Unpublish(id1); err != nil {
		t.Fatal(err)
	}
	if exists(f.arch.Dir(id1)) {
		t.Fatal("Unpublish left the published archive")
	}
	if !exists(filepath.Join(f.staging(id1), archive.ManifestName)) {
		t.Fatal("Unpublish must move the archive back to staging")
	}
	// Nothing published: Unpublish is a no-op.
	if err := f.arch.Unpublish(id1); err != nil {
		t.Fatalf("second Unpublish: %v", err)
	}
	// A published archive of another correction survives CleanStaged.
	if err := f.arch.Stage(context.Background(), "aaaaaaaaaaaaaaaaaaaaaaaa", items[1:]); err != nil {
		t.Fatal(err)
	}
	kept, err := f.arch.Publish("aaaaaaaaaaaaaaaaaaaaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.arch.CleanStaged(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{id1, id2} {
		if exists(f.staging(id)) || exists(f.arch.Dir(id)) {
			t.Errorf("%s survived CleanStaged", id)
		}
	}
	if !exists(filepath.Join(kept, archive.ManifestName)) {
		t.Fatal("CleanStaged removed a published archive")
	}
	entries, err := os.ReadDir(f.layout.Archive())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("archive dir holds %d entries after CleanStaged, want only the published one", len(entries))
	}
	_, err = f.arch.Publish(id1)
	faulttest.Require(t, err, fault.ErrIntegrity, "publish after CleanStaged")
}

func TestCleanStagedWithoutArchiveDir(t *testing.T) {
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := archive.New(l, objectstore.TestStore(t)) // .plan/archive does not exist
	if err := a.CleanStaged(); err != nil {
		t.Fatalf("CleanStaged on a workspace without an archive: %v", err)
	}
}

func TestDiscard(t *testing.T) {
	f := newFixture(t)
	if err := f.arch.Stage(context.Background(), id1, f.items(t)); err != nil {
		t.Fatal(err)
	}
	if err := f.arch.Discard(id1); err != nil {
		t.Fatal(err)
	}
	if exists(f.staging(id1)) {
		t.Fatal("Discard left the staging")
	}
	if err := f.arch.Discard(id1); err != nil {
		t.Fatalf("Discard of nothing: %v", err)
	}
	_, err := f.arch.Publish(id1)
	faulttest.Require(t, err, fault.ErrIntegrity, "publish discarded")
}

func TestInvalidCorrectionIDs(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"", "../x", "0123", "0123456789abcdef0123456/", "0123456789ABCDEF01234567", "0123456789abcdef012345678", "../../../../../../../tmp"} {
		faulttest.Require(t, f.arch.Stage(context.Background(), id, nil), fault.ErrInvalid, "Stage "+id)
		_, err := f.arch.Publish(id)
		faulttest.Require(t, err, fault.ErrInvalid, "Publish "+id)
		faulttest.Require(t, f.arch.Unpublish(id), fault.ErrInvalid, "Unpublish "+id)
		faulttest.Require(t, f.arch.Discard(id), fault.ErrInvalid, "Discard "+id)
	}
	entries, err := os.ReadDir(f.layout.Archive())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("refused IDs created %d entries", len(entries))
	}
}

func TestStageIntegrityErrors(t *testing.T) {
	f := newFixture(t)
	root := f.build(t, map[string]spec{
		"dir/file":   file("x", 0o644),
		"notdir":     file("plain", 0o644),
		"emptydir":   {dir: true},
		"symlinkdir": link("dir"),
	})
	for name, a := range map[string]artifact.Artifact{
		"missing":                art("nope.txt", tree.Added, "x"),
		"missing nested":         art("dir/nope", tree.Modified, "x"),
		"directory":              art("dir", tree.Added, ""),
		"empty directory":        art("emptydir", tree.Added, ""),
		"middle is a file":       art("notdir/x", tree.Added, "x"),
		"middle is a symlink":    art("symlinkdir/file", tree.Added, "x"),
		"escaping path":          art("../outside", tree.Added, "x"),
		"absolute path":          art("/etc/passwd", tree.Added, "x"),
		"dot component":          art("dir/./file", tree.Added, "x"),
		"empty path":             art("", tree.Added, "x"),
		"escaping deletion path": art("../outside", tree.Deleted, "x"),
	} {
		t.Run(name, func(t *testing.T) {
			items := []port.ArchiveItem{{DecisionID: "d", Attempt: 1, ResultTree: root, Artifacts: []artifact.Artifact{a}}}
			err := f.arch.Stage(context.Background(), id1, items)
			faulttest.Require(t, err, fault.ErrIntegrity, name)
			if exists(filepath.Join(f.layout.State(), "outside")) || exists(filepath.Join(f.layout.Archive(), "outside")) {
				t.Fatal("a refused path was written outside the archive")
			}
		})
	}
}

func TestStageMissingObjects(t *testing.T) {
	f := newFixture(t)
	// A result tree that was never stored.
	items := []port.ArchiveItem{{DecisionID: "d", Attempt: 1, ResultTree: tree.Sum([]byte("no such tree")),
		Artifacts: []artifact.Artifact{art("a", tree.Added, "x")}}}
	faulttest.Require(t, f.arch.Stage(context.Background(), id1, items), fault.ErrIntegrity, "missing tree")

	// A tree whose blob is missing: built in a batch that stores the tree only.
	b := f.store.NewBatch()
	h, _, err := b.PutTree(objectstore.Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: tree.Sum([]byte("x"))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	items[0].ResultTree = h
	faulttest.Require(t, f.arch.Stage(context.Background(), id1, items), fault.ErrIntegrity, "missing blob")
}

func TestStageInvalidDecisionID(t *testing.T) {
	f := newFixture(t)
	root := f.build(t, map[string]spec{"a": file("x", 0o644)})
	for _, d := range []string{"", "..", "../x", "/abs"} {
		items := []port.ArchiveItem{{DecisionID: d, Attempt: 1, ResultTree: root, Artifacts: []artifact.Artifact{art("a", tree.Added, "x")}}}
		err := f.arch.Stage(context.Background(), id1, items)
		if err == nil {
			t.Fatalf("decision ID %q accepted", d)
		}
		if fault.Kind(err) == nil {
			t.Fatalf("decision ID %q: unclassified error %v", d, err)
		}
	}
	if exists(filepath.Join(f.layout.State(), "x")) || exists(filepath.Join(f.layout.Archive(), "x")) {
		t.Fatal("a refused decision ID wrote outside its archive")
	}
}

func TestStageCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := f.arch.Stage(ctx, id1, f.items(t))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if exists(filepath.Join(f.staging(id1), archive.ManifestName)) {
		t.Fatal("a cancelled Stage wrote a manifest")
	}
}

// When .plan/archive is not a directory every operation fails instead of pretending success.
func TestArchiveDirNotADirectory(t *testing.T) {
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
	if err := a.Stage(context.Background(), id1, nil); err == nil {
		t.Error("Stage succeeded")
	}
	if _, err := a.Publish(id1); err == nil {
		t.Error("Publish succeeded")
	}
	if err := a.CleanStaged(); err == nil {
		t.Error("CleanStaged succeeded")
	}
	if err := a.Unpublish(id1); err == nil {
		t.Error("Unpublish succeeded")
	}
}

// Unpublish must not silently drop a published archive when a staging directory of the same
// correction is in the way.
func TestUnpublishOverStaging(t *testing.T) {
	f := newFixture(t)
	items := f.items(t)
	if err := f.arch.Stage(context.Background(), id1, items); err != nil {
		t.Fatal(err)
	}
	if _, err := f.arch.Publish(id1); err != nil {
		t.Fatal(err)
	}
	if err := f.arch.Stage(context.Background(), id1, items[1:]); err != nil {
		t.Fatal(err)
	}
	err := f.arch.Unpublish(id1)
	if err == nil && exists(f.arch.Dir(id1)) {
		t.Fatal("Unpublish reported success but the archive is still published")
	}
	if err != nil && !exists(filepath.Join(f.arch.Dir(id1), archive.ManifestName)) {
		t.Fatal("a failed Unpublish lost the published archive")
	}
}
