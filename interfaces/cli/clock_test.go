package cli

import (
	"regexp"
	"testing"
	"time"
)

// A time is shown in the zone asked for, with the offset that says which it is.
func TestTimesCarryTheirOffset(t *testing.T) {
	at := time.Date(2026, 11, 25, 18, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		loc  *time.Location
		want string
	}{
		{time.UTC, "2026-11-25 18:30:00 +0000"},
		{time.FixedZone("IST", 5*3600+1800), "2026-11-26 00:00:00 +0530"},
		{time.FixedZone("PST", -8*3600), "2026-11-25 10:30:00 -0800"},
	} {
		if got := formatIn(at, c.loc); got != c.want {
			t.Errorf("in %s: %q, want %q", c.loc, got, c.want)
		}
	}
	if got, want := localTime(at), at.Local().Format(localLayout); got != want {
		t.Errorf("localTime: %q, want %q", got, want)
	}
}

// Human output gives times in the local zone with their offset (JSON in UTC): checkpoint show,
// plan sessions, redo's summary; a view's time that does not parse is shown as it is.
func TestHumanTimesCarryTheirOffset(t *testing.T) {
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}`)
	dir := claudeTurn(t)
	if o := mustPlan(t, dir, "sessions"); !regexp.MustCompile(`session \S+, started ` + stamp.String() + `\)`).MatchString(o.stdout) {
		t.Errorf("sessions: %v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "show", "@"); !regexp.MustCompile(`(?m)^created:     ` + stamp.String() + `$`).MatchString(o.stdout) {
		t.Errorf("checkpoint show: %v", o)
	}
	mustPlan(t, dir, "exec", "--id", "x", "--", "true")
	mustPlan(t, dir, "--yes", "undo")
	if o := mustPlan(t, dir, "redo", "--dry-run"); !regexp.MustCompile(`^Redoing undo \S+ \(` + stamp.String() + `\)`).MatchString(o.stdout) {
		t.Errorf("redo: %v", o)
	}
	if got := localOf("not a time"); got != "not a time" {
		t.Errorf("localOf: %q", got)
	}
}
