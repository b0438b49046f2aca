package application

import (
	"testing"

	"github.com/planhq/plan/domain/correction"
)

// The merges of a surgical revert run on diff3Merge: clean regions and conflicts reach the domain's
// rendering with their sides in place.
func TestDiff3MergeRendersThroughTheDomain(t *testing.T) {
	l := correction.MergeLabels{Ours: "live", Base: "after d", Theirs: "before d"}
	got, conflicted := correction.Merge3(diff3Merge, []byte("a\nb\nc\nd\ne\n"), []byte("a\nb\nc\nd\nE\n"), []byte("A\nb\nc\nd\ne\n"), l)
	if string(got) != "A\nb\nc\nd\nE\n" || conflicted {
		t.Errorf("apart: %q, %v", got, conflicted)
	}
	got, conflicted = correction.Merge3(diff3Merge, []byte("a\nb\nc\n"), []byte("a\nX\nc\n"), []byte("a\nY\nc\n"), l)
	if string(got) != "a\n<<<<<<< live\nX\n||||||| after d\nb\n=======\nY\n>>>>>>> before d\nc\n" || !conflicted {
		t.Errorf("overlap: %q, %v", got, conflicted)
	}
}
