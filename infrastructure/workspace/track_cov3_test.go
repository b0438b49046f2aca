package workspace

import (
	"fmt"
	"strings"
	"testing"
)

// TestDirtySetNamesAndBound: an event naming a directory itself makes it be listed again without
// naming an entry; past maxDirtyNames names the set gives up its names and says why (the next
// snapshot walks), and stays so whatever comes after.
func TestDirtySetNamesAndBound(t *testing.T) {
	var d dirtySet
	d.add("a", "", 0)
	if dd := d.dirs["a"]; dd == nil || !dd.relist || len(dd.names) != 0 || d.names != 0 {
		t.Fatalf("an event on the directory itself: %+v", d.dirs["a"])
	}
	d.add("a", "f", evContent)
	d.add("a", "f", evAttr)
	if got := d.dirs["a"].names["f"]; got != evContent|evAttr || d.names != 1 {
		t.Fatalf("two events for one name: flags %b, %d names", got, d.names)
	}
	for i := range maxDirtyNames {
		d.add("b", fmt.Sprint(i), evContent)
	}
	if !strings.Contains(d.uncertain, "changed names") || d.dirs != nil || d.names != 0 {
		t.Fatalf("past the bound: uncertain %q, %d dirs, %d names", d.uncertain, len(d.dirs), d.names)
	}
	d.add("c", "g", evEntry)
	if d.dirs != nil {
		t.Fatal("an uncertain set took more names")
	}
}
