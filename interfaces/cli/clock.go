package cli

import "time"

// The human output shows times in the local zone with their offset, so a time read in a terminal
// or pasted into a report says which zone it is in; JSON gives them in UTC (RFC 3339).
const localLayout = "2006-01-02 15:04:05 -0700"

// localTime is t in the process's local zone, with its offset.
func localTime(t time.Time) string { return formatIn(t, time.Local) }

// localOf is localTime of a view's RFC 3339 time (as JSON prints it); what does not parse is
// shown as it is.
func localOf(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return rfc3339
	}
	return localTime(t)
}

// formatIn is t in loc, with its offset.
func formatIn(t time.Time, loc *time.Location) string { return t.In(loc).Format(localLayout) }
