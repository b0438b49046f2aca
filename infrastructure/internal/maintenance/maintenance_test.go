package maintenance_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// settingsWith returns the settings of a workspace whose .plan/config.yaml holds content (no file
// when content is nil).
func settingsWith(t *testing.T, content *string) *maintenance.Settings {
	t.Helper()
	dir := t.TempDir()
	l, err := workspace.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	if content != nil {
		if err := os.WriteFile(filepath.Join(l.State(), maintenance.ConfigFile), []byte(*content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return maintenance.NewSettings(l)
}

func ptr(s string) *string { return &s }

func TestRetention(t *testing.T) {
	cases := []struct {
		name    string
		content *string
		rule    port.RetentionRule
		ok      bool
		invalid string // substring of the invalid-input error; "" for none
	}{
		{name: "no file", content: nil},
		{name: "no retention key", content: ptr("# nothing configured\n{}\n")},
		{name: "null retention", content: ptr("retention:\n")},
		{name: "unknown top-level key", content: ptr("retension:\n  keep: 3\n"), invalid: "field retension not found"},
		{name: "retention without keep", content: ptr("retention:\n  older_than: 24h\n"), invalid: "retention.older_than needs retention.keep"},
		{name: "classes", content: ptr("retention:\n  classes:\n    - type: pre_decision\n      older_than: 168h\n    - labels: {phase: milestone}\n      keep: forever\n"),
			rule: port.RetentionRule{Classes: []port.RetentionClass{{Type: "pre_decision", OlderThan: 168 * time.Hour},
				{Labels: map[string]string{"phase": "milestone"}, Forever: true}}}, ok: true},
		{name: "class matching nothing", content: ptr("retention:\n  classes:\n    - older_than: 1h\n"), invalid: "needs a type or labels"},
		{name: "class of an unknown type", content: ptr("retention:\n  classes:\n    - type: weekly\n      older_than: 1h\n"), invalid: "unknown checkpoint type"},
		{name: "class with both", content: ptr("retention:\n  classes:\n    - type: manual\n      older_than: 1h\n      keep: forever\n"), invalid: "one of them"},
		{name: "class with neither", content: ptr("retention:\n  classes:\n    - type: manual\n"), invalid: "one of them"},
		{name: "class keep not forever", content: ptr("retention:\n  classes:\n    - type: manual\n      keep: always\n"), invalid: "one of them"},
		{name: "class bad label", content: ptr("retention:\n  classes:\n    - labels: {Bad: x}\n      keep: forever\n"), invalid: "label key"},
		{name: "class bad age", content: ptr("retention:\n  classes:\n    - type: manual\n      older_than: soon\n"), invalid: "retention.classes[0].older_than"},
		{name: "archives only", content: ptr("retention:\n  archives:\n    keep: 0\n"),
			rule: port.RetentionRule{Archives: &port.ArchiveRetention{}}, ok: true},
		{name: "both", content: ptr("retention:\n  keep: 2\n  archives:\n    keep: 5\n    older_than: 720h\n"),
			rule: port.RetentionRule{Keep: 2, Archives: &port.ArchiveRetention{Keep: 5, OlderThan: 720 * time.Hour}}, ok: true},
		{name: "archives without keep", content: ptr("retention:\n  archives:\n    older_than: 1h\n"), invalid: "retention.archives.keep"},
		{name: "archives negative keep", content: ptr("retention:\n  archives:\n    keep: -1\n"), invalid: "retention.archives.keep"},
		{name: "archives bad age", content: ptr("retention:\n  archives:\n    keep: 1\n    older_than: soon\n"), invalid: "retention.archives.older_than"},
		{name: "empty retention", content: ptr("retention: {}\n")},
		{name: "keep only", content: ptr("retention:\n  keep: 50\n"), rule: port.RetentionRule{Keep: 50}, ok: true},
		{name: "keep and older_than", content: ptr("retention:\n  keep: 3\n  older_than: 168h\n"),
			rule: port.RetentionRule{Keep: 3, OlderThan: 168 * time.Hour}, ok: true},
		{name: "keep 0", content: ptr("retention:\n  keep: 0\n"), invalid: "retention.keep must be at least 1"},
		{name: "keep negative", content: ptr("retention:\n  keep: -2\n"), invalid: "retention.keep must be at least 1"},
		{name: "bad duration", content: ptr("retention:\n  keep: 1\n  older_than: a week\n"), invalid: `retention.older_than "a week" is not a positive duration`},
		{name: "negative duration", content: ptr("retention:\n  keep: 1\n  older_than: -1h\n"), invalid: "is not a positive duration"},
		{name: "days are not a Go duration", content: ptr("retention:\n  keep: 1\n  older_than: 7d\n"), invalid: "is not a positive duration"},
		{name: "unknown key under retention", content: ptr("retention:\n  keep: 1\n  kepp: 2\n"), invalid: "field kepp not found"},
		{name: "keep is not a number", content: ptr("retention:\n  keep: many\n"), invalid: "config.yaml"},
		{name: "not YAML", content: ptr("retention: [\n"), invalid: "config.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rule, ok, err := settingsWith(t, c.content).Retention()
			if c.invalid != "" {
				if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.invalid) {
					t.Fatalf("err = %v, want an invalid-input error with %q", err, c.invalid)
				}
				if ok {
					t.Error("ok with an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok || !reflect.DeepEqual(rule, c.rule) {
				t.Errorf("Retention() = %+v, %v; want %+v, %v", rule, ok, c.rule, c.ok)
			}
		})
	}
}

// An empty config.yaml, or one holding only comments, is a valid YAML document that configures
// nothing; it must not make every `plan run` warn.
func TestRetentionEmptyFile(t *testing.T) {
	for _, content := range []string{"", "# retention is off for now\n"} {
		_, ok, err := settingsWith(t, &content).Retention()
		if err != nil || ok {
			t.Errorf("config %q: ok=%v err=%v, want no policy and no error", content, ok, err)
		}
	}
}

func TestRetentionUnreadable(t *testing.T) {
	dir := t.TempDir()
	l, err := workspace.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	// config.yaml is a directory: reading it fails, and the error is reported, never taken as "no policy".
	if err := os.Mkdir(filepath.Join(l.State(), maintenance.ConfigFile), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := maintenance.NewSettings(l).Retention(); err == nil || ok {
		t.Fatalf("Retention() on a directory: ok=%v err=%v", ok, err)
	}
}

// storeFixture stores root/{a.txt, sub/b.txt, link} plus an unreferenced blob.
type storeFixture struct {
	s                  *objectstore.Store
	health             *maintenance.Health
	root, sub          tree.Hash
	blobA, blobB, lone tree.Hash
}

func putBlob(t *testing.T, b *objectstore.Batch, data []byte) tree.Hash {
	t.Helper()
	h := tree.Sum(data)
	if _, err := b.PutBlob(bytes.NewReader(data), h, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return h
}

func newStoreFixture(t *testing.T) *storeFixture {
	t.Helper()
	f := &storeFixture{s: objectstore.TestStore(t)}
	f.health = maintenance.NewHealth(f.s, nil)
	a := []byte(strings.Repeat("alpha\n", 100))
	bb := []byte("beta\n")
	b := f.s.NewBatch()
	f.blobA = putBlob(t, b, a)
	f.blobB = putBlob(t, b, bb)
	var err error
	if f.sub, _, err = b.PutTree(objectstore.Tree{
		{Name: "b.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(bb)), Hash: f.blobB},
	}); err != nil {
		t.Fatal(err)
	}
	if f.root, _, err = b.PutTree(objectstore.Tree{
		{Name: "a.txt", Kind: tree.KindFile, Mode: 0o600, Size: int64(len(a)), Hash: f.blobA},
		{Name: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "a.txt"},
		{Name: "sub", Kind: tree.KindDir, Mode: 0o755, Hash: f.sub},
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	// The unreferenced blob goes in a pack of its own, so gc can drop that pack.
	b = f.s.NewBatch()
	f.lone = putBlob(t, b, []byte("nobody needs me"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestHealthListTree(t *testing.T) {
	f := newStoreFixture(t)
	entries, err := f.health.ListTree(f.root)
	if err != nil {
		t.Fatal(err)
	}
	want := []tree.Entry{
		{Path: "a.txt", Kind: tree.KindFile, Mode: 0o600, Size: 600, Hash: f.blobA},
		{Path: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "a.txt"},
		{Path: "sub", Kind: tree.KindDir, Mode: 0o755, Hash: f.sub},
	}
	if len(entries) != len(want) {
		t.Fatalf("ListTree = %+v, want %+v", entries, want)
	}
	for i := range want {
		if entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, entries[i], want[i])
		}
	}
	if _, err := f.health.ListTree(f.blobA); err == nil {
		t.Error("ListTree of a blob succeeded")
	}
	if _, err := f.health.ListTree(tree.Sum([]byte("absent"))); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("ListTree of a missing tree: %v, want an integrity error", err)
	}
}

func TestHealthCheckObject(t *testing.T) {
	f := newStoreFixture(t)
	for _, h := range []tree.Hash{f.root, f.sub, f.blobA, f.blobB, f.lone} {
		for _, readData := range []bool{false, true} {
			if err := f.health.CheckObject(h, readData); err != nil {
				t.Errorf("CheckObject(%s, %v): %v", h, readData, err)
			}
		}
	}
	if err := f.health.CheckObject(tree.Sum([]byte("absent")), false); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("CheckObject of a missing object: %v, want an integrity error", err)
	}
}

func TestHealthUsageAndCollect(t *testing.T) {
	f := newStoreFixture(t)
	u := f.health.Usage()
	if u.Packs != 2 || u.Objects != 5 || u.StoredBytes <= 0 || u.RawBytes < 600 {
		t.Fatalf("Usage() = %+v, want 2 packs, 5 objects and their sizes", u)
	}

	// A missing root: nothing is deleted.
	if _, err := f.health.Collect([]tree.Hash{f.root, tree.Sum([]byte("absent"))}, nil); err == nil ||
		!strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("Collect with a missing root: %v", err)
	}
	if !f.s.Has(f.lone) || f.health.Usage() != u {
		t.Fatal("a failed Collect changed the store")
	}

	r, err := f.health.Collect([]tree.Hash{f.root}, nil)
	if err != nil {
		t.Fatal(err, nil)
	}
	if r.LiveObjects != 4 || r.PacksDeleted != 1 || r.BytesReclaimed <= 0 {
		t.Errorf("Collect = %+v, want 4 live objects and the lone blob's pack deleted", r)
	}
	if f.s.Has(f.lone) {
		t.Error("the unreferenced blob survived gc")
	}
	for _, h := range []tree.Hash{f.root, f.sub, f.blobA, f.blobB} {
		if err := f.health.CheckObject(h, true); err != nil {
			t.Errorf("live object %s after gc: %v", h, err)
		}
	}
	if after := f.health.Usage(); after.Objects != 4 || after.Packs != 1 || after.StoredBytes >= u.StoredBytes {
		t.Errorf("Usage() after gc = %+v (before %+v)", after, u)
	}

	// Nothing to keep: everything goes.
	r, err = f.health.Collect(nil, nil)
	if err != nil || r.LiveObjects != 0 || f.health.Usage().Objects != 0 {
		t.Errorf("Collect(nil) = %+v, %v; usage %+v", r, err, f.health.Usage())
	}
}
