package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateDurable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := CreateDurable(p, []byte("data"), 0o400); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "data" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o400 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// It never overwrites: an existing path is an error, and the file is left as it was.
	if err := CreateDurable(p, []byte("other"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("overwrite: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "data" {
		t.Fatal("an existing file was changed")
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, durable := range []bool{true, false} {
		for _, content := range []string{"one", "two, longer"} {
			if err := Replace(p, []byte(content), durable); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != content {
				t.Fatalf("durable=%v: got %q, want %q", durable, b, content)
			}
		}
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Fatalf("temporary files left: %v", des)
	}
	// A target that cannot be replaced (a directory) fails and leaves no temporary file.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Replace(sub, []byte("x"), true); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	if des, _ := os.ReadDir(dir); len(des) != 2 {
		t.Fatalf("a failed Replace left files: %v", des)
	}
	if err := Replace(filepath.Join(dir, "missing", "f"), nil, true); err == nil {
		t.Fatal("a missing directory was not reported")
	}
}

func TestSyncs(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncFS(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
	if err := SyncFS(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncFS of a missing directory: %v", err)
	}
}

// The per-path syncs other platforms use run here too: every listed path, a path removed
// meanwhile is no error, a symlink is skipped, an unreadable one is.
func TestSyncEachAndWalk(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d/f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if err := syncEach(dir, []string{"d/f", "d", ".", "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := syncWalk(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncPaths(dir, []string{"d/f"}); err != nil {
		t.Fatal(err)
	}
	if err := SyncTree(dir); err != nil {
		t.Fatal(err)
	}
	if err := syncWalk(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("walking a missing tree succeeded")
	}
}
