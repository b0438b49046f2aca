package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// AdvanceLedger from a state that covers the first records reads only the newer ones, and ends
// where a replay of them all ends; a baseline among the newer ones starts afresh; a state that
// does not cover the names (a record removed) is not used.
func TestAdvanceLedgerReadsOnlyNewerRecords(t *testing.T) {
	recs := newRecords(t)
	r1, r2, r3 := tree.Sum([]byte("r1")), tree.Sum([]byte("r2")), tree.Sum([]byte("r3"))
	commitRecord(t, recs, 1, recordBody(1, cpChange("cp-1", quoted(r1), 1)))
	commitRecord(t, recs, 2, recordBody(2, fmt.Sprintf(
		`{"kind":"checkpoint","key":"cp-2","rows":{"checkpoints":[{"id":"cp-2","root_tree":%s,"created_at":2,"pinned":1}]}}`, quoted(r2))))
	names, err := recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	prior, err := AdvanceLedger(recs, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := prior.PinnedRoots(); !slices.Equal(got, []tree.Hash{r2}) {
		t.Fatalf("pinned roots %v, want %v", got, r2)
	}
	third := commitRecord(t, recs, 3, recordBody(3, fmt.Sprintf(
		`{"kind":"checkpoint","key":"cp-3","rows":{"checkpoints":[{"id":"cp-3","root_tree":%s,"created_at":3,"pinned":true}]}}`, quoted(r3))))
	names, err = recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	if !prior.Covers(names) || prior.Covers(names[1:]) {
		t.Fatal("Covers: want the prefix covered, and nothing else")
	}
	// The records prior covers are not read again: damage them, and the advance still works.
	next, err := AdvanceLedger(&failingReads{Ledger: recs, fail: names[:2]}, names, prior)
	if err != nil {
		t.Fatal(err)
	}
	full, err := AdvanceLedger(recs, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next.Summary().Roots, full.Summary().Roots) || next.Records != 3 || next.Names != 3 || next.Digest != full.Digest {
		t.Fatalf("advanced %+v, replayed %+v", next, full)
	}
	if got := next.PinnedRoots(); len(got) != 2 {
		t.Fatalf("pinned roots %v: want cp-2's and cp-3's (pinned as a number and as a boolean)", got)
	}
	trees, err := RecordTrees(recs, third)
	if err != nil || !slices.Equal(trees, []tree.Hash{r3}) {
		t.Fatalf("RecordTrees: %v, %v", trees, err)
	}
	if _, err := RecordTrees(recs, names[0][:20]); err == nil {
		t.Fatal("RecordTrees of no record succeeded")
	}
	// A baseline after the covered records starts afresh: it holds the whole history.
	commitRecord(t, recs, 4, `{"format":1,"seq":4,"at":"2026-01-01T00:00:00Z","schema":1,"baseline":true,"changes":[`+cpChange("cp-9", quoted(r1), 9)+`]}`)
	names, err = recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	after, err := AdvanceLedger(recs, names, next)
	if err != nil {
		t.Fatal(err)
	}
	if s := after.Summary(); s.Checkpoints != 1 || s.Records != 1 {
		t.Fatalf("after a baseline: %d checkpoints, %d records", s.Checkpoints, s.Records)
	}
	// A state that does not cover the names is not used: everything is replayed.
	if err := recs.Remove(names[0]); err != nil {
		t.Fatal(err)
	}
	names, err = recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	again, err := AdvanceLedger(recs, names, next)
	if err != nil || again.Summary().Checkpoints != 1 {
		t.Fatalf("from a state that does not cover the names: %+v, %v", again, err)
	}
	// A record that cannot be read, or folded, fails the advance.
	if _, err := AdvanceLedger(&failingReads{Ledger: recs, fail: names[len(names)-1:]}, names, nil); !errors.Is(err, errRead) {
		t.Fatalf("a record that cannot be read: %v", err)
	}
	bad := commitRecord(t, recs, 5, recordBody(5, `{"kind":"checkpoint","key":"x","rows":{"checkpoints":[{"root_tree":7}]}}`))
	names = append(names, bad)
	if _, err := AdvanceLedger(recs, names, after); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a record that cannot be folded: %v", err)
	}
	notJSON := commitRecord(t, recs, 6, "not json")
	if _, err := RecordTrees(recs, notJSON); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("RecordTrees of a record that does not parse: %v", err)
	}
	if _, err := AdvanceLedger(recs, append(names, notJSON), nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("AdvanceLedger of a record that does not parse: %v", err)
	}
	if truthy("yes") || !truthy(true) || truthy(jsonNumber("x")) {
		t.Fatal("truthy")
	}
	if IsVanished(errRead) || !IsVanished(vanished(fault.Integrity("record x is missing"))) {
		t.Fatal("IsVanished")
	}
}

var errRead = errors.New("injected read failure")

// failingReads fails the reads of the records fail names.
type failingReads struct {
	Ledger
	fail []string
}

func (f *failingReads) Read(name string) ([]byte, error) {
	if slices.Contains(f.fail, name) {
		return nil, errRead
	}
	return f.Ledger.Read(name)
}

func jsonNumber(s string) any { return json.Number(s) }
