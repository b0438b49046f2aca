package testkit_test

import (
	"bytes"
	"compress/flate"
	"testing"

	"github.com/planhq/plan/tests/testkit"
)

// Noise is the same for the same seed, a prefix of itself when shorter, other for another seed, and
// does not compress.
func TestNoise(t *testing.T) {
	a := testkit.Noise(1, 64<<10)
	if !bytes.Equal(a, testkit.Noise(1, 64<<10)) || !bytes.Equal(a[:100], testkit.Noise(1, 100)) {
		t.Fatal("Noise is not a function of its seed")
	}
	if bytes.Equal(a[:100], testkit.Noise(2, 100)) || bytes.Equal(a[:100], testkit.Noise(1<<20, 100)) {
		t.Fatal("two seeds give the same noise")
	}
	var z bytes.Buffer
	w, err := flate.NewWriter(&z, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(a); err != nil || w.Close() != nil {
		t.Fatal(err)
	}
	if z.Len() < len(a) {
		t.Fatalf("%d bytes of noise compress to %d", len(a), z.Len())
	}
}
