package correction

import "github.com/epiclabs-io/diff3"

// testDiff3 is the line diff the application wires (github.com/epiclabs-io/diff3, false conflicts
// excluded), so the merges are tested as they run.
func testDiff3(ours, base, theirs []string) []MergeRegion {
	rs := diff3.Diff3Merge(ours, base, theirs, true)
	out := make([]MergeRegion, len(rs))
	for i, r := range rs {
		out[i].Ok = r.Ok
		if c := r.Conflict; c != nil {
			out[i].Conflict = &MergeConflict{Ours: c.A, Base: c.O, Theirs: c.B}
		}
	}
	return out
}
