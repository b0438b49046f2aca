package cli

import (
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
