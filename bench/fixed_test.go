package main

import (
	"testing"
	"time"
)

// A read-only command's run splits into start-up and exit (outside plan's own measure), wiring,
// database, lock and its own work, which add up to the run.
func TestReadOnlySplit(t *testing.T) {
	got := readOnlySplit(20*time.Millisecond, map[string]float64{"total": 12, "open": 5, "open.db": 2, "lock": 1, "close": 0.5})
	want := map[string]time.Duration{"startup": 8 * time.Millisecond, "wiring": 3 * time.Millisecond, "db": 2 * time.Millisecond,
		"lock": time.Millisecond, "work": 6 * time.Millisecond}
	var sum time.Duration
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
		sum += got[k]
	}
	if sum != 20*time.Millisecond || len(got) != len(readOnlyParts) {
		t.Errorf("the parts add up to %v (%d parts)", sum, len(got))
	}
	if s := readOnlySplit(time.Millisecond, map[string]float64{"total": 3}); s["startup"] != 0 {
		t.Errorf("a total longer than the wall clock: start-up %v", s["startup"])
	}
}
