package testkit_test

import (
	"bytes"
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

// FlipMiddleByte changes the middle byte of a read-only file and nothing else.
func TestFlipMiddleByte(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abcde"), 0o400); err != nil {
		t.Fatal(err)
	}
	testkit.FlipMiddleByte(t, p)
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, []byte{'a', 'b', 'c' ^ 0xff, 'd', 'e'}) {
		t.Fatalf("after the flip: %q, %v", b, err)
	}
}
