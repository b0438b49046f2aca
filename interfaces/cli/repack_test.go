package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gc --aggressive repacks a private store (small files bundled) and says so; every checkpoint
// still verifies and restores. A shared store is refused, exit 3, before anything is done.
func TestGCAggressive(t *testing.T) {
	dir := newWorkspace(t)
	// Files alike enough that bundling them pays (a store this small grows in a repack otherwise,
	// and then the old packs are kept).
	for i := range 30 {
		writeFile(t, dir, fmt.Sprintf("src/f%02d.go", i), fmt.Sprintf("package src\n\n// File %d.\n", i)+strings.Repeat("func common() string { return \"the same body in every file\" }\n", 20)+fmt.Sprintf("line 0 of file %d\n", i))
	}
	mustPlan(t, dir, "checkpoint", "create")
	writeFile(t, dir, "src/f00.go", "changed\n")
	mustPlan(t, dir, "checkpoint", "create")
	o := mustPlan(t, dir, "gc", "--aggressive")
	if !regexp.MustCompile(`(?m)^Repacked \d+ live objects from \d+(\.\d)? (B|KiB|MiB) into \d+(\.\d)? (B|KiB|MiB) \(\d+ files in [1-9]\d* bundles, \d+ as deltas against a similar file\)\.$`).MatchString(o.stdout) {
		t.Fatalf("gc --aggressive: %v", o)
	}
	mustPlan(t, dir, "verify", "--read-data")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", "@~1")
	if b, err := os.ReadFile(filepath.Join(dir, "src", "f00.go")); err != nil || !strings.HasSuffix(string(b), "line 0 of file 0\n") {
		t.Fatalf("restored from a repacked store: %q, %v", b, err)
	}

	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, ws, "init", "--store", "file://"+filepath.Join(base, "store"))
	writeFile(t, ws, "a.txt", "one\n")
	mustPlan(t, ws, "checkpoint", "create")
	if o := inWorkspace(ws, "gc", "--aggressive"); o.code != ExitInvalid || !strings.Contains(o.stderr, "private store only") {
		t.Fatalf("gc --aggressive on a shared store: %v", o)
	}
}
