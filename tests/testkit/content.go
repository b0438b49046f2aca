package testkit

import (
	"encoding/binary"
	"math/rand/v2"
)

// Noise returns n incompressible bytes that depend on seed alone: a store keeps them as they are,
// so a test finds them in a pack, and neither compression nor deltas shrink them. The first k bytes
// of Noise(seed, n) are Noise(seed, k).
func Noise(seed uint64, n int) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:8], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}
