package objectstore

import "slices"

// A delta is only worth computing when the new content repeats much of its base: a file rewritten
// from scratch shares nothing but its vocabulary with what it replaces, and its delta, which costs
// twice a whole compression (the base read and decoded, a dictionary encoder prepared), would then
// not pay. worthDelta tells the two apart for a fraction of that cost, by sampling both contents at
// content-defined points, as content-defined chunking does: an edit moves the bytes after it, but
// the points depend only on the bytes around them, so the samples of the unchanged parts survive.

const (
	// sampleShift sets the density of the sample points: a point where the hash's top 5 bits are
	// zero, one position in 32 on average.
	sampleShift = 64 - 5
	// smallDelta is the size below which a delta is always tried: it is cheap, and for a small
	// object the base's vocabulary alone, as dictionary, often saves the eighth a delta must.
	smallDelta = 4 << 10
)

// gear holds the gear hash's random constants (splitmix64 of 0..255, fixed so that the sampling is
// the same in every process).
var gear = func() (g [256]uint64) {
	var x uint64
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		g[i] = z ^ (z >> 31)
	}
	return g
}()

// samples calls fn with the hash of the 64 bytes before each sample point of b. A gear hash
// depends on the last 64 bytes only; the point is chosen by its top bits, which mix all 64.
func samples(b []byte, fn func(uint64)) {
	if len(b) <= 64 {
		return
	}
	var h uint64
	for _, c := range b[:64] {
		h = h<<1 + gear[c]
	}
	for _, c := range b[64:] {
		h = h<<1 + gear[c]
		if h < 1<<sampleShift {
			fn(h)
		}
	}
}

// worthDelta says whether raw repeats enough of base for a delta to be worth computing: a quarter
// of raw's samples, at least, are samples of base (a delta must save an eighth, and the samples
// that match stand for runs that it can copy). Objects under smallDelta always are.
func worthDelta(raw, base []byte) bool {
	if len(raw) < smallDelta {
		return true
	}
	in := make([]uint64, 0, len(base)>>(64-sampleShift)+16)
	samples(base, func(h uint64) { in = append(in, h) })
	slices.Sort(in)
	seen, hits := 0, 0
	samples(raw, func(h uint64) {
		seen++
		if _, ok := slices.BinarySearch(in, h); ok {
			hits++
		}
	})
	return seen == 0 || 4*hits >= seen // no sample point (a run of one byte, say): let the delta decide
}
