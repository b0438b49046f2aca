package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// CheckWritable passes, leaving nothing behind, when .plan/ can be written, and otherwise names the
// directory and the cause as one conflict error (not SQLite's "unable to open database file").
func TestCheckWritable(t *testing.T) {
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = l.CheckWritable()
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), l.State()) {
		t.Fatalf("CheckWritable without .plan: %v", err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(l.State())
	if err := l.CheckWritable(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadDir(l.State()); len(after) != len(before) {
		t.Fatalf("CheckWritable left files in .plan: %v", after)
	}
	// An immutable .plan (root ignores permission bits, not this flag), missing its .gitignore.
	if err := os.Remove(filepath.Join(l.State(), ".gitignore")); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, l.State()) // skips the immutable case, the rest having passed, where it cannot
	err = l.CheckWritable()
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "make it writable") {
		t.Fatalf("CheckWritable on an immutable .plan: %v", err)
	}
	if err := l.Init(); err == nil || !strings.Contains(err.Error(), ".gitignore") {
		t.Fatalf("Init on an immutable .plan: %v", err)
	}
}

// .plan must be a real directory: a file or a symlink there is refused as damage, since every write
// of plan's state (and a restore's staging) would otherwise land somewhere else.
func TestNewLayoutRefusesAStateDirThatIsNotADirectory(t *testing.T) {
	for name, make := range map[string]func(t *testing.T, p string){
		"file": func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"symlink to a directory": func(t *testing.T, p string) {
			if err := os.Symlink(t.TempDir(), p); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			make(t, filepath.Join(dir, StateDir))
			if _, err := NewLayout(dir); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "move it away") {
				t.Fatalf("NewLayout: %v", err)
			}
		})
	}
}

// Init reports a directory it cannot create, and keeps an existing .plan/.gitignore as it is.
func TestInitErrorsAndKeepsGitignore(t *testing.T) {
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.State(), 0o750); err != nil {
		t.Fatal(err)
	}
	gi := filepath.Join(l.State(), ".gitignore")
	if err := os.WriteFile(gi, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Logs(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err == nil || !strings.Contains(err.Error(), l.Logs()) {
		t.Fatalf("Init with a file where logs/ goes: %v", err)
	}
	if err := os.Remove(l.Logs()); err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(gi); string(b) != "mine\n" {
		t.Fatalf("Init rewrote an existing .gitignore: %q", b)
	}
}

// A journal that cannot be cleared (something that is not the record sits at its path) is an
// error: taking it for cleared would let the next command skip recovery of a pending operation.
func TestJournalClearAndWriteFailures(t *testing.T) {
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal(l)
	op := port.Operation{
		ID: "op1", Kind: "rollback", Direction: port.Forward,
		Source: tree.Sum([]byte("s")), Target: tree.Sum([]byte("t")), StartedAt: time.Unix(1, 0).UTC(),
	}
	if err := j.Write(op); err == nil {
		t.Fatal("Write without .plan/ succeeded")
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(l.JournalFile(), "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := j.Clear(); err == nil {
		t.Fatal("Clear of a journal path holding a directory succeeded")
	}
}
