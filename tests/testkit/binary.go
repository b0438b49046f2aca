// Package testkit builds the plan binary for the tests that drive it as a user would (the crash
// trials, the hostile suite): once per test binary, from this module's own source, into a
// temporary directory that Main removes when the tests end.
//
// It also holds what tests across the module share, each once: SkipUnderTestLog (binary.go),
// Immutable, Mutable, DamageStored and FlipMiddleByte (files.go), DataDir (datadir.go), Noise
// (content.go) and ClosedPort (net.go). It imports only the standard library, so any package's
// tests may use it (the tests of domain/ aside, which keep to domain/: their shared helpers live
// there, as domain/fault/faulttest).
//
// Invariants: every test of one test binary runs the same build; nothing is built until a test
// asks; a build failure fails each test that asks, with the compiler's output.
package testkit

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	mu   sync.Mutex // guards dir
	dir  string
	path string
	err  error
)

// Binary returns the path of the plan binary built from ./cmd/plan, building it on first use.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		d, e := os.MkdirTemp("", "plan-bin-")
		if e != nil {
			err = e
			return
		}
		mu.Lock()
		dir = d
		mu.Unlock()
		path = filepath.Join(d, "plan")
		out, e := exec.Command("go", "build", "-o", path, "github.com/planhq/plan/cmd/plan").CombinedOutput()
		if e != nil {
			err = fmt.Errorf("go build ./cmd/plan: %w\n%s", e, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Main runs the tests and removes the build and the tests' data directories (DataDir): call it
// from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	if dataRoot != "" {
		_ = os.RemoveAll(dataRoot)
	}
	return code
}

// SkipUnderTestLog skips a test that limits the size of the files the process writes
// (RLIMIT_FSIZE) when go test records the test's file accesses for its result cache
// (-test.testlogfile, plain `go test` without -count=1): that record is a file of the same
// process, appended to as the test runs, and past the limit its writes fail and go test reports
// the package as failed. `make check` runs with -count=1, without the record.
func SkipUnderTestLog(t testing.TB) {
	t.Helper()
	if f := flag.Lookup("test.testlogfile"); f != nil && f.Value.String() != "" {
		t.Skip("limits the file size of the process, which would fail go test's log of file accesses: run with -count=1")
	}
}
