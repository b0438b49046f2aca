package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/planhq/plan/tests/testkit"
)

// limitFileSize makes every write past limit bytes fail with EFBIG, as a full disk fails a write
// with ENOSPC, for the rest of the test. The limit is the process's: no test here runs in parallel.
func limitFileSize(t *testing.T, limit uint64) {
	t.Helper()
	testkit.SkipUnderTestLog(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatalf("restore the file size limit: %v", err)
		}
	})
}

// A write that fails halfway is an error, and what it began is removed: a durable create never
// leaves a truncated file that a later reader would take for the real one.
func TestCreateDurableWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	limitFileSize(t, 1024)
	err := CreateDurable(p, make([]byte, 4096), 0o600)
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("CreateDurable past the size limit: %v, want EFBIG", err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 0 {
		t.Fatalf("a failed create left %v", des)
	}
}

// A replacement whose write fails leaves the old content in place, byte for byte, and no
// temporary file, durable or not.
func TestReplaceWriteFailureKeepsTheOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	limitFileSize(t, 1024)
	for _, durable := range []bool{true, false} {
		err := Replace(p, make([]byte, 4096), durable)
		if !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("durable=%v: Replace past the size limit: %v, want EFBIG", durable, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "old content" {
			t.Fatalf("durable=%v: after a failed Replace the file holds %q (%v)", durable, b, err)
		}
		if des, _ := os.ReadDir(dir); len(des) != 1 {
			t.Fatalf("durable=%v: a failed Replace left %v", durable, des)
		}
	}
}
