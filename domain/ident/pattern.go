package ident

// Pattern is a name of the shape ^[FIRST][REST]{0,N}$ over ASCII: the shape of every name plan
// validates (decision and run IDs, label keys, agents' names and session IDs, workspace IDs). It is
// checked by hand rather than by a regular expression: compiling ^[…][…]{0,127}$ expands the
// repetition into a program of 128 copies, and compiled at package initialisation that cost every
// process, `plan --version` included, about a millisecond of CPU for the few names it validates.
//
// Invariants: Match(s) is exactly what regexp.MustCompile(`^[FIRST][REST]{0,MAX-1}$`).MatchString(s)
// says (so a name that is not ASCII never matches); a class holds ASCII letters, digits and
// punctuation, written as a regular expression's bracket class (ranges a-z, a trailing '-').
type Pattern struct {
	first, rest *[128]bool
	// max is the longest name, in bytes (every byte of a match is ASCII).
	max int
}

// NewPattern returns the pattern ^[first][rest]{0,maxLen-1}$. It panics on a class it cannot read
// (a programming error, as regexp.MustCompile's).
func NewPattern(first, rest string, maxLen int) Pattern {
	if maxLen < 1 {
		panic("ident: a pattern's names are at least one byte long")
	}
	return Pattern{first: class(first), rest: class(rest), max: maxLen}
}

// class reads a bracket class's contents: single characters and ranges x-y; '-' first or last is
// itself.
func class(spec string) *[128]bool {
	var c [128]bool
	for i := 0; i < len(spec); i++ {
		lo := spec[i]
		hi := lo
		if i+2 < len(spec) && spec[i+1] == '-' {
			hi = spec[i+2]
			i += 2
		}
		if lo > hi || hi >= 128 {
			panic("ident: malformed character class " + spec)
		}
		for b := lo; ; b++ {
			c[b] = true
			if b == hi {
				break
			}
		}
	}
	return &c
}

// Match reports whether s is a name of the pattern.
func (p Pattern) Match(s string) bool {
	if len(s) == 0 || len(s) > p.max {
		return false
	}
	if s[0] >= 128 || !p.first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] >= 128 || !p.rest[s[i]] {
			return false
		}
	}
	return true
}
