package ident

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The patterns plan validates names with, each against the regular expression it replaces.
var patternCases = []struct {
	first, rest string
	max         int
}{
	{"a-z0-9", "a-z0-9_-", 64},          // run IDs
	{"A-Za-z0-9", "A-Za-z0-9_-", 128},   // decision IDs
	{"a-z0-9", "a-z0-9._-", 63},         // label keys
	{"a-z", "a-z0-9-", 32},              // agents' names
	{"A-Za-z0-9", "A-Za-z0-9._-", 128},  // session IDs
	{"A-Za-z0-9", "A-Za-z0-9._:-", 200}, // scoped plan names
	{"A-Za-z0-9", "A-Za-z0-9._-", 64},   // workspace IDs
	{"A-Za-z0-9_-", "A-Za-z0-9_-", 64},  // scope names
	{"-a", "-", 1},
}

func TestPatternMatchesWhatTheRegexpMatches(t *testing.T) {
	alphabet := []string{"a", "z", "A", "Z", "0", "9", "_", "-", ".", ":", "/", " ", "\n", "é", "\xff", "@", "[", "`", "{", "\x00", "\x7f"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range patternCases {
		re := regexp.MustCompile(`^[` + c.first + `][` + c.rest + `]{0,` + strconv.Itoa(c.max-1) + `}$`)
		p := NewPattern(c.first, c.rest, c.max)
		try := func(s string) {
			t.Helper()
			if got, want := p.Match(s), re.MatchString(s); got != want {
				t.Fatalf("%s: Match(%q) = %v, the regexp says %v", re, s, got, want)
			}
		}
		try("")
		for _, n := range []int{c.max - 1, c.max, c.max + 1} {
			try(strings.Repeat("a", max(n, 0)))
			try(strings.Repeat("0", max(n, 0)))
		}
		for range 20000 {
			var b strings.Builder
			n := rng.IntN(c.max + 3)
			for range n {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			try(b.String())
		}
	}
}

func TestPatternRefusesWhatItCannotRead(t *testing.T) {
	for name, fn := range map[string]func(){
		"no length":          func() { NewPattern("a", "a", 0) },
		"a reversed range":   func() { NewPattern("z-a", "a", 3) },
		"a non-ASCII class":  func() { NewPattern("a-é", "a", 3) },
		"a non-ASCII single": func() { NewPattern("\xff", "a", 3) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			fn()
		})
	}
}
