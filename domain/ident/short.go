package ident

import (
	"crypto/sha256"
	"slices"
)

// Short names. Generated IDs start with their creation time, so every ID of a day starts alike and
// a short prefix of one is never unique. A checkpoint's short form is instead a hash of its ID,
// written in the letters k to z (as jj writes change IDs): it spreads evenly from its first letter,
// and cannot be mistaken for a hex ID prefix, since the two alphabets share no character.
//
// Invariants: Short(id) is ShortLength letters in k..z, a pure function of id; a short name shown
// to a user is a prefix of it at least MinPrefix letters long and unique among the IDs it was made
// for (ShortNames).

// ShortLength is the length of a short form.
const ShortLength = 12

// shortAlphabet maps a hex digit to its letter: 0 is z, f is k.
const shortAlphabet = "zyxwvutsrqponmlk"

// Short returns id's short form.
func Short(id string) string {
	sum := sha256.Sum256([]byte(id))
	out := make([]byte, ShortLength)
	for i := range out {
		b := sum[i/2]
		if i%2 == 0 {
			b >>= 4
		}
		out[i] = shortAlphabet[b&0x0f]
	}
	return string(out)
}

// IsShortRef reports whether s can be (a prefix of) a short form: MinPrefix to ShortLength letters
// in k..z.
func IsShortRef(s string) bool {
	if len(s) < MinPrefix || len(s) > ShortLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'k' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// ShortNames returns, for each of ids, the shortest prefix of its short form that is at least
// MinPrefix letters long and that no other of ids' short forms starts with (the whole short form
// when two collide in all ShortLength letters, which 48 bits make unlikely).
func ShortNames(ids []string) map[string]string {
	type pair struct{ id, short string }
	ps := make([]pair, len(ids))
	for i, id := range ids {
		ps[i] = pair{id, Short(id)}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		switch {
		case a.short < b.short:
			return -1
		case a.short > b.short:
			return 1
		}
		return 0
	})
	out := make(map[string]string, len(ids))
	for i, p := range ps {
		n := MinPrefix
		if i > 0 {
			n = max(n, common(p.short, ps[i-1].short)+1)
		}
		if i+1 < len(ps) {
			n = max(n, common(p.short, ps[i+1].short)+1)
		}
		out[p.id] = p.short[:min(n, ShortLength)]
	}
	return out
}

// common is the length of the longest common prefix of a and b.
func common(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
