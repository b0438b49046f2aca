package ident

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
)

func TestNewIsHexAndSortsByTime(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	seen := map[string]bool{}
	for i := range 2000 {
		id := New(base.Add(time.Duration(i) * time.Millisecond))
		if len(id) != Length {
			t.Fatalf("New() = %q: %d characters, want %d", id, len(id), Length)
		}
		if err := ValidateFull("test", id); err != nil {
			t.Fatalf("New() = %q fails ValidateFull: %v", id, err)
		}
		if id <= prev {
			t.Fatalf("IDs do not sort by time: %q after %q", id, prev)
		}
		if seen[id] {
			t.Fatalf("duplicate ID %q", id)
		}
		seen[id] = true
		prev = id
	}
	// Same millisecond: the time prefix is equal, the random suffix differs.
	a, b := New(base), New(base)
	if a[:12] != b[:12] || a == b {
		t.Errorf("same-millisecond IDs %q, %q: want equal 12-char prefix and different suffix", a, b)
	}
	// The prefix is the big-endian millisecond count.
	if got := New(time.UnixMilli(0x0102030405))[:12]; got != "000102030405" {
		t.Errorf("time prefix = %q, want 000102030405", got)
	}
}

func TestValidateRef(t *testing.T) {
	ok := []string{"abcd", "0123", "0123456789abcdef01234567", "deadbeef"}
	bad := []string{"", "abc", "ABCD", "abcg", "0123456789abcdef012345678", "ab/d", "..ab", "abcd ", " abcd", "ab\x00d"}
	for _, s := range ok {
		if err := ValidateRef("checkpoint", s); err != nil {
			t.Errorf("ValidateRef(%q) = %v", s, err)
		}
	}
	for _, s := range bad {
		err := ValidateRef("checkpoint", s)
		if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ValidateRef(%q) = %v, want ErrInvalid", s, err)
		}
		if err != nil && !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("ValidateRef(%q) message %q does not name the object kind", s, err)
		}
	}
	if err := ValidateFull("x", "abcd"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("ValidateFull of a prefix = %v, want ErrInvalid", err)
	}
	if err := ValidateFull("x", strings.Repeat("g", Length)); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("ValidateFull of non-hex = %v, want ErrInvalid", err)
	}
	if err := ValidateFull("x", strings.Repeat("a", Length)); err != nil {
		t.Errorf("ValidateFull of a valid ID = %v", err)
	}
}
