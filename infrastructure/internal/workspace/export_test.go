package workspace

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// exported builds buildA's tree, snapshots it, and returns its entries as Flatten gives them.
func exported(t *testing.T) (*testWS, []tree.Entry) {
	t.Helper()
	w := newTestWS(t)
	buildA(w)
	return w, w.flatten(w.snapshot().Root)
}

func TestExportIsByteExactAndAtomic(t *testing.T) {
	w, entries := exported(t)
	target := filepath.Join(t.TempDir(), "a", "b", "copy")
	stats, err := NewExporter(w.store).Export(t.Context(), entries, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { makeWritable(target) })
	treetest.RequireSame(t, target, nil, entries, "the exported copy")
	var files, links, dirs int
	for _, e := range entries {
		switch e.Kind {
		case tree.KindFile:
			files++
		case tree.KindSymlink:
			links++
		case tree.KindDir:
			dirs++
		}
	}
	if stats.Files != files || stats.Symlinks != links || stats.Dirs != dirs {
		t.Fatalf("stats %+v, want %d files %d links %d dirs", stats, files, links, dirs)
	}
	requireNoStage(t, filepath.Dir(target))

	// An existing empty directory is replaced whole; progress is told every entry.
	empty := t.TempDir()
	p := &exportProgress{}
	if _, err := NewExporter(w.store).Export(t.Context(), entries, empty, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { makeWritable(empty) })
	treetest.RequireSame(t, empty, nil, entries, "the copy into an empty directory")
	if p.n != len(entries) || !p.done {
		t.Fatalf("progress saw %d of %d entries (done %v)", p.n, len(entries), p.done)
	}
}

func TestExportDamagedObjectLeavesNothing(t *testing.T) {
	w, entries := exported(t)
	bad := append([]tree.Entry(nil), entries...)
	for i := range bad {
		if bad[i].Kind == tree.KindFile {
			bad[i].Hash = sha256.Sum256([]byte("content the store never saw"))
			break
		}
	}
	target := filepath.Join(t.TempDir(), "copy")
	_, err := NewExporter(w.store).Export(t.Context(), bad, target, nil)
	if !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("export of a missing object = %v, want an integrity error", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed export left %s: %v", target, err)
	}
	requireNoStage(t, filepath.Dir(target))
}

func TestExportRefusesToWriteThroughASymlink(t *testing.T) {
	w := newTestWS(t)
	outside := t.TempDir()
	entries := []tree.Entry{
		{Path: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: outside},
		{Path: "link/f", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: sha256.Sum256([]byte("x"))},
	}
	target := filepath.Join(t.TempDir(), "copy")
	if _, err := NewExporter(w.store).Export(t.Context(), entries, target, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("an entry under a symlink = %v, want an integrity error", err)
	}
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Fatalf("the export wrote through the symlink: %v", names)
	}
	requireNoStage(t, filepath.Dir(target))
	if _, err := NewExporter(w.store).Export(t.Context(), []tree.Entry{{Path: "x", Kind: tree.Kind(99)}}, target, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("an unknown kind = %v", err)
	}
}

func TestExportRefusesABusyOrOddTarget(t *testing.T) {
	w, entries := exported(t)
	x := NewExporter(w.store)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for target, kind := range map[string]error{
		full:                          fault.ErrConflict,
		file:                          fault.ErrInvalid,
		link:                          fault.ErrInvalid,
		filepath.Join(file, "below"):  fault.ErrInvalid,
		filepath.Join(file, "a", "b"): nil, // its parent cannot be made: a plain error
	} {
		_, err := x.Export(t.Context(), entries, target, nil)
		if err == nil || (kind != nil && !errors.Is(err, kind)) {
			t.Errorf("export into %s = %v, want %v", target, err, kind)
		}
	}
	requireNoStage(t, dir)

	// A target that fills up while the copy is built is left as the other writer made it.
	racing := filepath.Join(dir, "racing")
	p := &exportProgress{onAdd: func() { _ = os.MkdirAll(filepath.Join(racing, "theirs"), 0o755) }}
	if _, err := x.Export(t.Context(), entries, racing, p); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a target filled meanwhile = %v, want a conflict", err)
	}
	if names, _ := os.ReadDir(racing); len(names) != 1 || names[0].Name() != "theirs" {
		t.Fatalf("the racing target holds %v", names)
	}
	requireNoStage(t, dir)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := x.Export(ctx, entries, filepath.Join(dir, "cancelled"), nil); err == nil {
		t.Fatal("a cancelled export succeeded")
	}
	requireNoStage(t, dir)
}

type exportProgress struct {
	n     int
	done  bool
	onAdd func()
}

func (p *exportProgress) Start(string, int64) {}
func (p *exportProgress) Add(n int64) {
	p.n += int(n)
	if p.onAdd != nil {
		p.onAdd()
	}
}
func (p *exportProgress) Done() { p.done = true }

// requireNoStage fails when an export's staging directory is left in dir.
func requireNoStage(t *testing.T, dir string) {
	t.Helper()
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		if strings.Contains(n.Name(), ".plan-restore-") {
			t.Fatalf("staging directory %s left in %s", n.Name(), dir)
		}
	}
}

// makeWritable lets t.TempDir's cleanup delete a copy that holds read-only directories.
func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}
