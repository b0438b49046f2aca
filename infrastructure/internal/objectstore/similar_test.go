package objectstore

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/planhq/plan/tests/testkit"
)

// worthDelta passes edits anywhere in a file, and a file rewritten from scratch with the same
// vocabulary fails it; small files always pass.
func TestWorthDelta(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	base := text(1, 20_000)
	for name, c := range map[string]struct {
		raw  []byte
		want bool
	}{
		"edited":            {edit(r, base), true},
		"edited at the top": {append([]byte("// a new header, longer than a line or two, written above the rest\n"), base[300:]...), true},
		"half rewritten":    {append(bytes.Clone(base[:10_000]), text(2, 10_000)...), true},
		"appended to":       {append(bytes.Clone(base), text(3, 5_000)...), true},
		"rewritten":         {text(4, 20_000), false},
		"random":            {testkit.Noise(5, 20_000), false},
		"small and new":     {text(6, smallDelta-1), true},
		"one byte repeated": {bytes.Repeat([]byte{'x'}, 10_000), true},
		"a tenth kept":      {append(bytes.Clone(base[:2_000]), text(7, 18_000)...), false},
	} {
		if got := worthDelta(c.raw, base); got != c.want {
			t.Errorf("%s: worthDelta = %v, want %v", name, got, c.want)
		}
	}
}

func BenchmarkWorthDelta(b *testing.B) {
	base := text(1, 9000)
	raw := text(2, 9000)
	b.SetBytes(int64(len(base) + len(raw)))
	for b.Loop() {
		worthDelta(raw, base)
	}
}
