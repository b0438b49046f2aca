package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Immutable makes path immutable (chattr +i) until the test ends: the tests run as root, whom
// permission bits do not stop, and only this flag refuses root a write. It skips the test where the
// flag cannot be set: a user who is not root, a file system without the attribute (tmpfs), no
// chattr (e2fsprogs) on the machine.
func Immutable(t testing.TB, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s not possible here (needs root and a file system that has the attribute): %v %s", path, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
}

// Mutable takes the flag Immutable set off path again before the test ends, failing the test where
// it cannot: the test goes on to prove what happens once the cause is gone.
func Mutable(t testing.TB, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", "-i", path).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i %s: %v %s", path, err, out)
	}
}

// DamageStored flips one byte inside the stored copy of content, in whichever pack of packDir
// (files *.pack) holds it, the way a failing disk would: the pack keeps its size and mode, and every
// other object stays as it was. content must be stored as it is (Noise is), at least 64 bytes long.
// It fails the test when no pack holds content.
func DamageStored(t testing.TB, packDir string, content []byte) {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(packDir, "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	probe := content[len(content)/2 : len(content)/2+64]
	for _, p := range packs {
		raw, err := os.ReadFile(p) // #nosec G304 -- a pack of the test's own store
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(raw, probe)
		if i < 0 {
			continue
		}
		raw[i] ^= 0xff
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o400); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no pack of the %d in %s holds the content", len(packs), packDir)
}

// FlipMiddleByte inverts the byte in the middle of the file at path, the way a failing disk would:
// the file keeps its size. A read-only file (a pack, a cached copy) is made writable (0600) for
// the write, and stays so.
func FlipMiddleByte(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path) // #nosec G304 -- a file of the test's own
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty: no byte to flip", path)
	}
	b[len(b)/2] ^= 0xff
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
