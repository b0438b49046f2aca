package application

import (
	"github.com/epiclabs-io/diff3"

	"github.com/planhq/plan/domain/correction"
)

// diff3Merge is the line diff of a surgical revert's merges (correction.Diff3):
// github.com/epiclabs-io/diff3's regions, false conflicts excluded.
func diff3Merge(ours, base, theirs []string) []correction.MergeRegion {
	rs := diff3.Diff3Merge(ours, base, theirs, true)
	out := make([]correction.MergeRegion, len(rs))
	for i, r := range rs {
		out[i].Ok = r.Ok
		if c := r.Conflict; c != nil {
			out[i].Conflict = &correction.MergeConflict{Ours: c.A, Base: c.O, Theirs: c.B}
		}
	}
	return out
}
