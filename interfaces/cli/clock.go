package cli

import "time"

// The human output shows times in the local zone with their offset, so a time read in a terminal
// or pasted into a report says which zone it is in; JSON gives them in UTC (RFC 3339).
const localLayout = "2006-01-02 15:04:05 -0700"

// localTime is t in the process's local zone, with its offset.
func localTime(t time.Time) string { return formatIn(t, time.Local) }

// formatIn is t in loc, with its offset.
func formatIn(t time.Time, loc *time.Location) string { return t.In(loc).Format(localLayout) }
