package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// A sync that fails must be reported, never taken for durability: a path whose parent is a file
// cannot be opened (ENOTDIR is not "removed meanwhile"), and a character device cannot be fsync'd.
func TestSyncFailuresAreReported(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syncEach(dir, []string{"file", "file/below"}); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("syncing a path below a file: %v, want ENOTDIR", err)
	}
	if runtime.GOOS != "linux" {
		return // fsync of a character device fails on Linux; elsewhere it need not
	}
	if err := syncPath(os.DevNull); err == nil {
		t.Fatalf("fsync of %s succeeded", os.DevNull)
	}
	if err := SyncDir(os.DevNull); err == nil {
		t.Fatalf("SyncDir of %s succeeded", os.DevNull)
	}
}
