package checkpoint

import (
	"fmt"
	"time"

	"github.com/planhq/plan/domain/fault"
)

// Calendar is calendar retention, with the semantics of restic's `forget --keep-hourly/daily/
// weekly/monthly`: walking the checkpoints newest first, each rule keeps a checkpoint when it is
// the newest of its hour (day, ISO week, month: in the local time zone) and the rule has buckets
// left; the oldest checkpoint is kept too while a rule still has buckets left (the history is kept
// as long as the counts allow). A checkpoint is kept when --keep or any rule keeps it (a union).
// 0 switches a rule off.
type Calendar struct {
	Hourly, Daily, Weekly, Monthly int
}

// IsZero reports whether no rule is set.
func (c Calendar) IsZero() bool { return c == Calendar{} }

// Validate refuses a negative count (0 switches a rule off).
func (c Calendar) Validate() error {
	for _, r := range []struct {
		name string
		n    int
	}{{"hourly", c.Hourly}, {"daily", c.Daily}, {"weekly", c.Weekly}, {"monthly", c.Monthly}} {
		if r.n < 0 {
			return fault.Invalid("--keep-%s must be zero (off) or more, not %d", r.name, r.n)
		}
	}
	return nil
}

// calendarRule is one rule's state during a walk.
type calendarRule struct {
	name   string
	left   int
	bucket func(time.Time) string
	last   string
}

// CalendarKeeper decides, for the checkpoints given newest first, which the rules keep.
type CalendarKeeper struct {
	rules []*calendarRule
}

// Keeper starts a walk of the checkpoints, newest first.
func (c Calendar) Keeper() *CalendarKeeper {
	k := &CalendarKeeper{}
	add := func(name string, n int, bucket func(time.Time) string) {
		if n > 0 {
			k.rules = append(k.rules, &calendarRule{name: name, left: n, bucket: bucket})
		}
	}
	add("hourly", c.Hourly, func(t time.Time) string { return t.Format("2006-01-02 15h") })
	add("daily", c.Daily, func(t time.Time) string { return t.Format("2006-01-02") })
	add("weekly", c.Weekly, func(t time.Time) string {
		y, w := t.ISOWeek()
		return fmt.Sprintf("%d-W%02d", y, w)
	})
	add("monthly", c.Monthly, func(t time.Time) string { return t.Format("2006-01") })
	return k
}

// Keep takes the next checkpoint (newest first), made at t, and returns why the rules keep it, or
// "" when none does. oldest says it is the last one the walk sees.
func (k *CalendarKeeper) Keep(t time.Time, oldest bool) string {
	why := ""
	t = t.Local()
	for _, r := range k.rules {
		if r.left == 0 {
			continue
		}
		b := r.bucket(t)
		if b == r.last && !oldest {
			continue
		}
		what := "newest"
		if b == r.last {
			what = "oldest"
		}
		r.last = b
		r.left--
		if why != "" {
			why += "; "
		}
		why += fmt.Sprintf("%s checkpoint of %s (--keep-%s)", what, b, r.name)
	}
	return why
}
