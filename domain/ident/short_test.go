package ident

import (
	"strings"
	"testing"
	"time"
)

func TestShortFormsAreLettersAndSpreadFromTheFirst(t *testing.T) {
	base := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	firsts := map[byte]int{}
	var ids []string
	for i := range 1000 {
		id := New(base.Add(time.Duration(i) * time.Millisecond))
		ids = append(ids, id)
		s := Short(id)
		if len(s) != ShortLength || !IsShortRef(s) || strings.ContainsAny(s, "0123456789abcdef") {
			t.Fatalf("Short(%s) = %q", id, s)
		}
		if Short(id) != s {
			t.Fatal("Short is not a function of the ID")
		}
		firsts[s[0]]++
	}
	// Time-ordered IDs share their first characters; their short forms must not.
	if len(firsts) != 16 {
		t.Fatalf("first letters of 1000 short forms: %v, want all 16", firsts)
	}
	names := ShortNames(ids)
	seen := map[string]bool{}
	for _, id := range ids {
		n := names[id]
		if len(n) < MinPrefix || !strings.HasPrefix(Short(id), n) {
			t.Fatalf("short name %q of %s", n, id)
		}
		for _, other := range ids {
			if other != id && strings.HasPrefix(Short(other), n) {
				t.Fatalf("short name %q of %s is also a prefix of %s's short form", n, id, other)
			}
		}
		seen[n] = true
	}
	if len(seen) != len(ids) {
		t.Fatal("short names are not unique")
	}
	if n := ShortNames([]string{ids[0]})[ids[0]]; len(n) != MinPrefix {
		t.Fatalf("a lone ID's short name %q, want %d letters", n, MinPrefix)
	}
	// Two IDs with the same short form (the same ID twice) get it whole.
	if n := ShortNames([]string{ids[0], ids[0]})[ids[0]]; n != Short(ids[0]) {
		t.Fatalf("colliding short forms: %q", n)
	}
}

func TestIsShortRef(t *testing.T) {
	for s, want := range map[string]bool{
		"kkkk": true, "zzzzzzzzzzzz": true, "kzy": false, "zzzzzzzzzzzzz": false, "abcd": false, "kkk1": false, "KKKK": false,
	} {
		if IsShortRef(s) != want {
			t.Errorf("IsShortRef(%q) = %v", s, !want)
		}
	}
}
