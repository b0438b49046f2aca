package checkpoint_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

func TestCalendarValidate(t *testing.T) {
	if !(checkpoint.Calendar{}).IsZero() || (checkpoint.Calendar{Weekly: 1}).IsZero() {
		t.Fatal("IsZero misjudges")
	}
	if err := (checkpoint.Calendar{Hourly: 1, Daily: 0, Weekly: 3, Monthly: 12}).Validate(); err != nil {
		t.Fatal(err)
	}
	for c, want := range map[checkpoint.Calendar]string{
		{Hourly: -1}:  "--keep-hourly must be zero (off) or more, not -1",
		{Daily: -2}:   "--keep-daily must be zero (off) or more, not -2",
		{Weekly: -3}:  "--keep-weekly must be zero (off) or more, not -3",
		{Monthly: -4}: "--keep-monthly must be zero (off) or more, not -4",
	} {
		if err := c.Validate(); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
}

// Walking newest first, each rule keeps the newest checkpoint of its buckets while it has buckets
// left, and the oldest checkpoint too while it still has some; the reasons of several rules join.
func TestCalendarKeeper(t *testing.T) {
	old := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = old })
	at := func(s string) time.Time {
		tm, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	k := checkpoint.Calendar{Daily: 2, Weekly: 1, Monthly: 3}.Keeper()
	walk := []struct {
		at     string
		oldest bool
		want   string
	}{
		{"2025-03-01 11:30:00", false, "newest checkpoint of 2025-03-01 (--keep-daily); newest checkpoint of 2025-W09 (--keep-weekly); newest checkpoint of 2025-03 (--keep-monthly)"},
		{"2025-03-01 10:00:00", false, ""},
		{"2025-02-28 13:00:00", false, "newest checkpoint of 2025-02-28 (--keep-daily); newest checkpoint of 2025-02 (--keep-monthly)"},
		{"2025-02-20 12:00:00", false, ""}, // the daily rule has no bucket left, the week and month are taken
		{"2025-01-20 00:00:00", false, "newest checkpoint of 2025-01 (--keep-monthly)"},
		{"2025-01-19 00:00:00", true, ""}, // every rule is spent: the oldest is not kept
	}
	for _, w := range walk {
		if got := k.Keep(at(w.at), w.oldest); got != w.want {
			t.Errorf("Keep(%s, %v) = %q, want %q", w.at, w.oldest, got, w.want)
		}
	}
	h := checkpoint.Calendar{Hourly: 5}.Keeper()
	if got := h.Keep(at("2025-03-01 11:30:00"), false); got != "newest checkpoint of 2025-03-01 11h (--keep-hourly)" {
		t.Errorf("hourly: %q", got)
	}
	if got := h.Keep(at("2025-03-01 11:10:00"), true); got != "oldest checkpoint of 2025-03-01 11h (--keep-hourly)" {
		t.Errorf("the oldest, in a bucket already kept: %q", got)
	}
	// Buckets are the local zone's.
	time.Local = time.FixedZone("east", 3*3600)
	if got := (checkpoint.Calendar{Daily: 1}).Keeper().Keep(at("2025-03-01 22:00:00"), false); got != "newest checkpoint of 2025-03-02 (--keep-daily)" {
		t.Errorf("local day: %q", got)
	}
	if got := (checkpoint.Calendar{}).Keeper().Keep(at("2025-03-01 22:00:00"), true); got != "" {
		t.Errorf("no rule keeps: %q", got)
	}
}
