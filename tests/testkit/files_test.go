package testkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/tests/testkit"
)

// An immutable file refuses even root a write; once mutable again, it takes one.
func TestImmutableAndMutable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, p)
	if err := os.WriteFile(p, []byte("b"), 0o600); err == nil {
		t.Fatal("wrote an immutable file")
	}
	testkit.Mutable(t, p)
	if err := os.WriteFile(p, []byte("b"), 0o600); err != nil {
		t.Fatalf("write once mutable: %v", err)
	}
}
