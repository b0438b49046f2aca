package correction

import (
	"bytes"
	"strings"
)

// maxMergeBytes bounds the files a surgical revert merges line by line; a larger one is a conflict
// (the merge holds all three versions in memory, and files that large are rarely hand-written text).
const maxMergeBytes = 8 << 20

// isText reports whether b can be merged line by line: no NUL byte (git's test for binary content)
// and within maxMergeBytes.
func isText(b []byte) bool {
	return len(b) <= maxMergeBytes && bytes.IndexByte(b, 0) < 0
}

// splitLines cuts b after every "\n", keeping the terminators, so joining the lines gives b back
// exactly, a last line without a newline included.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// MergeLabels name the three sides in conflict markers.
type MergeLabels struct{ Ours, Base, Theirs string }

// Diff3 splits a three-way merge of lines into regions (a, o, b: ours, the common ancestor,
// theirs), false conflicts (identical changes on both sides) excluded. The application wires
// github.com/epiclabs-io/diff3's Diff3Merge (Hunt–McIlroy LCS and the Khanna–Kunal–Pierce diff3
// formulation).
type Diff3 func(ours, base, theirs []string) []MergeRegion

// MergeRegion is one region of a three-way merge: lines every side agrees on (Ok), or a conflict.
type MergeRegion struct {
	Ok       []string
	Conflict *MergeConflict
}

// MergeConflict is the three sides' lines of a conflicting region.
type MergeConflict struct{ Ours, Base, Theirs []string }

// Merge3 merges line-wise the change base → theirs into ours (diff3: base is the common
// ancestor). Where both sides changed overlapping or adjacent lines differently it writes diff3-style
// markers (ours, base, theirs) and reports conflicted; identical changes on both sides are not a
// conflict. The diff and the merge regions come from diff; only the rendering is ours.
func Merge3(diff Diff3, base, ours, theirs []byte, l MergeLabels) (merged []byte, conflicted bool) {
	var out bytes.Buffer
	section := func(lines []string) {
		for _, s := range lines {
			out.WriteString(s)
		}
		if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
			out.WriteByte('\n') // a marker must start its own line
		}
	}
	for _, r := range diff(splitLines(ours), splitLines(base), splitLines(theirs)) {
		if r.Conflict == nil {
			for _, s := range r.Ok {
				out.WriteString(s)
			}
			continue
		}
		conflicted = true
		out.WriteString("<<<<<<< " + l.Ours + "\n")
		section(r.Conflict.Ours)
		out.WriteString("||||||| " + l.Base + "\n")
		section(r.Conflict.Base)
		out.WriteString("=======\n")
		section(r.Conflict.Theirs)
		out.WriteString(">>>>>>> " + l.Theirs + "\n")
	}
	return out.Bytes(), conflicted
}
