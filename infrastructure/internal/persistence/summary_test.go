package persistence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit"
)

// dbRoots is what the workspace's own gc keeps, read from the database.
func dbRoots(t *testing.T, db *DB) (roots []tree.Hash, n int, last time.Time) {
	t.Helper()
	ctx := context.Background()
	cps, err := NewCheckpoints(db).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cps {
		roots = append(roots, c.Root())
		if c.CreatedAt().After(last) {
			last = c.CreatedAt()
		}
	}
	plans, err := NewPlans(db).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		for _, d := range p.Decisions() {
			for _, a := range d.Attempts() {
				if !a.ResultTree.IsZero() && a.Status != plan.Reverted {
					roots = append(roots, a.ResultTree)
				}
			}
		}
	}
	sortHashes(roots)
	return roots, len(cps), last
}

// The records alone say what the database says a gc must keep, through deletions, reverts and
// compactions; pending records add their trees as maybe-roots.
func TestSummarizeLedgerMatchesTheDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	rng := rand.New(rand.NewPCG(3, 5))
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var cps []checkpoint.ID
	var p *plan.Plan
	for i := range 150 {
		now := base.Add(time.Duration(i) * time.Minute)
		switch rng.IntN(6) {
		case 0, 1:
			id := fmt.Sprintf("%016x%08x", i, rng.Uint32())
			c, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: now, Root: tree.Sum([]byte(id))})
			if err != nil {
				t.Fatal(err)
			}
			if err := NewCheckpoints(db).Add(ctx, c); err != nil {
				t.Fatal(err)
			}
			cps = append(cps, checkpoint.ID(id))
		case 2:
			if len(cps) > 0 {
				k := rng.IntN(len(cps))
				if err := NewCheckpoints(db).Delete(ctx, cps[k]); err != nil {
					t.Fatal(err)
				}
				cps = slices.Delete(cps, k, k+1)
			}
		case 3, 4:
			if p == nil {
				if p, err = plan.New(fmt.Sprintf("%024d", i), "p", "", true, now); err != nil {
					t.Fatal(err)
				}
			}
			d, err := p.Append(plan.Definition{ID: fmt.Sprintf("d%d", i), Run: "true"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Start(d.ID(), "", "", now); err != nil {
				t.Fatal(err)
			}
			code := 0
			if err := p.Finish(d.ID(), plan.Outcome{Status: plan.Succeeded, ExitCode: &code, ResultTree: tree.Sum([]byte{byte(i), 1})}, now); err != nil {
				t.Fatal(err)
			}
			if err := NewPlans(db).Save(ctx, p); err != nil {
				t.Fatal(err)
			}
		case 5:
			if p != nil {
				p.RevertStartedSince(now.Add(-20*time.Minute), fmt.Sprintf("op%d", i))
				if err := NewPlans(db).Save(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if i == 90 {
			if _, err := db.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if i%25 != 24 {
			continue
		}
		want, n, last := dbRoots(t, db)
		s, err := SummarizeLedger(recs)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := NewCheckpoints(db).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(s.List) {
			t.Fatalf("%d checkpoints listed from the records, %d in the database", len(s.List), len(listed))
		}
		for k, c := range listed {
			if got := s.List[k]; got.ID != string(c.ID()) || got.Root != c.Root() || !got.CreatedAt.Equal(c.CreatedAt()) || got.Type != string(c.Type()) {
				t.Fatalf("checkpoint %d: records say %+v, the database %s %s %v", k, got, c.ID(), c.Root(), c.CreatedAt())
			}
		}
		if !slices.Equal(s.Roots, want) || s.Checkpoints != n || !s.LastCheckpoint.Equal(last) || len(s.MaybeRoots) != 0 {
			t.Fatalf("after %d operations: summary roots %d, checkpoints %d, last %v, maybe %d; database roots %d, checkpoints %d, last %v",
				i+1, len(s.Roots), s.Checkpoints, s.LastCheckpoint, len(s.MaybeRoots), len(want), n, last)
		}
	}
	// A pending record (a transaction that may be committing): its trees are maybe-roots.
	body := []byte(`{"format":1,"seq":99999,"at":"2026-01-01T00:00:00Z","schema":1,"changes":[{"kind":"checkpoint","key":"x","rows":{"checkpoints":[{"id":"x","root_tree":"` +
		tree.Sum([]byte("pending")).String() + `"}]}}]}`)
	if _, err := recs.Prepare(99999, body); err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeLedger(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.MaybeRoots) != 1 || s.MaybeRoots[0] != tree.Sum([]byte("pending")) {
		t.Fatalf("maybe-roots of a pending record: %v", s.MaybeRoots)
	}
}

// A damaged record is damage, not something to skip: a gc must not collect around it.
func TestSummarizeLedgerRefusesDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	c, _ := checkpoint.New(checkpoint.Params{ID: fmt.Sprintf("%024d", 1), Type: checkpoint.Manual, CreatedAt: time.Now(), Root: tree.Sum([]byte("r"))})
	if err := NewCheckpoints(db).Add(ctx, c); err != nil {
		t.Fatal(err)
	}
	names, _ := recs.Committed()
	testkit.FlipMiddleByte(t, filepath.Join(dir, "objects", "records", names[0]))
	if _, err := SummarizeLedger(recs); err == nil || !isIntegrity(err) {
		t.Fatalf("a damaged record: %v", err)
	}
}

func isIntegrity(err error) bool { return fault.Kind(err) == fault.ErrIntegrity }

// newRecords opens an empty record directory.
func newRecords(t *testing.T) *objectstore.Records {
	t.Helper()
	recs, err := objectstore.OpenRecords(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// commitRecord writes body as the committed record seq, the way a transaction leaves it, and
// returns its name.
func commitRecord(t *testing.T, recs *objectstore.Records, seq uint64, body string) string {
	t.Helper()
	name, err := recs.Prepare(seq, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := recs.Commit(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// recordBody is a well-formed record of seq holding changes (JSON).
func recordBody(seq uint64, changes string) string {
	return fmt.Sprintf(`{"format":1,"seq":%d,"at":"2026-01-01T00:00:00Z","schema":1,"changes":[%s]}`, seq, changes)
}

func cpChange(id, root string, created int64) string {
	return fmt.Sprintf(`{"kind":"checkpoint","key":%q,"rows":{"checkpoints":[{"id":%q,"type":"manual","note":"n-%s","root_tree":%s,"created_at":%d}]}}`,
		id, id, id, root, created)
}

func attemptChange(kind, key, plan, decision string, number int, result, status string) string {
	return fmt.Sprintf(`{"kind":%q,"key":%q,"rows":{"attempts":[{"plan_id":%q,"decision_id":%q,"number":%d,"result_tree":%q,"status":%q}]}}`,
		kind, key, plan, decision, number, result, status)
}

func quoted(h tree.Hash) string { return `"` + h.String() + `"` }

// The summary folds the records the way the database holds them: checkpoints created at the same
// instant are listed newest ID first, an empty root is none, a deleted attempt's result and the
// attempts a later whole-plan record (the first record format) no longer holds are not kept, and
// a reverted attempt's result needs no keeping.
func TestSummarizeLedgerFoldsRecords(t *testing.T) {
	recs := newRecords(t)
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC).UnixNano()
	r1, r2 := tree.Sum([]byte("r1")), tree.Sum([]byte("r2"))
	a1, a2, a3, a4 := tree.Sum([]byte("a1")), tree.Sum([]byte("a2")), tree.Sum([]byte("a3")), tree.Sum([]byte("a4"))
	commitRecord(t, recs, 1, recordBody(1, strings.Join([]string{
		cpChange("cp-a", quoted(r1), at),
		cpChange("cp-b", quoted(r2), at),
		cpChange("cp-c", `""`, at-1),
		cpChange("cp-d", `null`, at-2),
	}, ",")))
	// A whole plan p1 with two attempts, then the same plan holding only the first.
	commitRecord(t, recs, 2, recordBody(2, fmt.Sprintf(
		`{"kind":"plan","key":"p1","rows":{"attempts":[{"plan_id":"p1","decision_id":"d","number":1,"result_tree":%q,"status":"succeeded"},`+
			`{"plan_id":"p1","decision_id":"d","number":2,"result_tree":%q,"status":"succeeded"}]}}`, a1, a2)))
	commitRecord(t, recs, 3, recordBody(3, fmt.Sprintf(
		`{"kind":"plan","key":"p1","rows":{"attempts":[{"plan_id":"p1","decision_id":"d","number":1,"result_tree":%q,"status":"succeeded"}]}}`, a1)))
	// Row by row: an attempt recorded then deleted, one reverted, one kept.
	commitRecord(t, recs, 4, recordBody(4, strings.Join([]string{
		attemptChange("attempt", "p2/d/1", "p2", "d", 1, a3.String(), "succeeded"),
		attemptChange("attempt", "p2/d/2", "p2", "d", 2, a4.String(), "succeeded"),
		attemptChange("attempt", "p2/d/3", "p2", "d", 3, tree.Sum([]byte("a5")).String(), "reverted"),
	}, ",")))
	commitRecord(t, recs, 5, recordBody(5, `{"kind":"attempt","key":"p2/d/2","deleted":true},{"kind":"checkpoint","key":"cp-gone","deleted":true}`))

	s, err := SummarizeLedger(recs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range s.List {
		ids = append(ids, c.ID)
	}
	if want := []string{"cp-b", "cp-a", "cp-c", "cp-d"}; !slices.Equal(ids, want) {
		t.Fatalf("listed %v, want %v (same instant: newest ID first)", ids, want)
	}
	if s.List[0].Note != "n-cp-b" || s.List[0].Type != "manual" || s.List[0].Root != r2 || !s.List[2].Root.IsZero() || !s.List[3].Root.IsZero() {
		t.Fatalf("checkpoint summaries: %+v", s.List)
	}
	if s.Checkpoints != 4 || s.Records != 5 || !s.LastCheckpoint.Equal(time.Unix(0, at).UTC()) {
		t.Fatalf("checkpoints %d, records %d, last %v", s.Checkpoints, s.Records, s.LastCheckpoint)
	}
	want := []tree.Hash{r1, r2, {}, {}, a1, a3}
	sortHashes(want)
	if !slices.Equal(s.Roots, want) {
		t.Fatalf("roots %v, want %v (not a2: the plan's newer record dropped it; not a4: deleted; not a5: reverted)", s.Roots, want)
	}
}

// A record that cannot be folded is damage (fault.ErrIntegrity naming the record) or, written by a
// newer plan, a conflict that says to upgrade: never something to skip, since a gc would collect
// what it references.
func TestSummarizeLedgerRefusesUnreadableRecords(t *testing.T) {
	good := tree.Sum([]byte("g")).String()
	cases := []struct {
		name, body string
		kind       error
		says       string
	}{
		{"not JSON", `{"format":1,"seq":1,`, fault.ErrIntegrity, "cannot be read"},
		{"newer format", `{"format":2,"seq":1,"schema":1,"changes":[]}`, fault.ErrConflict, "upgrade plan"},
		{"newer schema", `{"format":1,"seq":1,"schema":99999,"changes":[]}`, fault.ErrConflict, "upgrade plan"},
		{"root not text", recordBody(1, cpChange("c", "42", 1)), fault.ErrIntegrity, "column root_tree is not text"},
		{"root not a hash", recordBody(1, cpChange("c", `"zz"`, 1)), fault.ErrIntegrity, "column root_tree"},
		{"result not a hash", recordBody(1, attemptChange("attempt", "p/d/1", "p", "d", 1, "xyz", "succeeded")), fault.ErrIntegrity, "column result_tree"},
		{"legacy plan result not text", recordBody(1, `{"kind":"plan","key":"p","rows":{"attempts":[{"result_tree":7}]}}`), fault.ErrIntegrity, "not text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := newRecords(t)
			// The bad record first: the search for a baseline reads only the ones after it.
			name := commitRecord(t, recs, 1, c.body)
			commitRecord(t, recs, 2, recordBody(2, cpChange("ok", `"`+good+`"`, 1)))
			_, err := SummarizeLedger(recs)
			if fault.Kind(err) != c.kind || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: %v, want %v saying %q and naming %s", c.name, err, c.kind, c.says, name)
			}
		})
	}
}

// summaryLedger is a real record directory whose listing or reading of pending records fails on
// demand, or that runs hook after its first listing of the committed records.
type summaryLedger struct {
	*objectstore.Records
	pendingErr, readPendingErr error
	hook                       func()
	lists                      int
}

func (s *summaryLedger) Committed() ([]string, error) {
	names, err := s.Records.Committed()
	s.lists++
	if s.lists == 1 && s.hook != nil {
		s.hook()
	}
	return names, err
}

func (s *summaryLedger) Pending() ([]string, error) {
	if s.pendingErr != nil {
		return nil, s.pendingErr
	}
	return s.Records.Pending()
}

func (s *summaryLedger) ReadPending(name string) ([]byte, error) {
	if s.readPendingErr != nil {
		return nil, s.readPendingErr
	}
	return s.Records.ReadPending(name)
}

// Pending records are read when the ledger can: one committed or discarded while being read is
// passed over, but a listing or reading failure, or a damaged pending record, fails the summary
// (its trees might be live).
func TestSummarizeLedgerPendingRecords(t *testing.T) {
	root := tree.Sum([]byte("root"))
	setup := func(t *testing.T, pending string) *summaryLedger {
		recs := newRecords(t)
		commitRecord(t, recs, 1, recordBody(1, cpChange("c", quoted(root), 1)))
		if _, err := recs.Prepare(2, []byte(pending)); err != nil {
			t.Fatal(err)
		}
		return &summaryLedger{Records: recs}
	}
	t.Run("gone meanwhile", func(t *testing.T) {
		l := setup(t, recordBody(2, cpChange("p", quoted(tree.Sum([]byte("p"))), 2)))
		l.readPendingErr = fmt.Errorf("read: %w", fs.ErrNotExist)
		s, err := SummarizeLedger(l)
		if err != nil || len(s.MaybeRoots) != 0 || !slices.Equal(s.Roots, []tree.Hash{root}) {
			t.Fatalf("a pending record gone meanwhile: %v, maybe %v, roots %v", err, s.MaybeRoots, s.Roots)
		}
	})
	t.Run("listing fails", func(t *testing.T) {
		l := setup(t, recordBody(2, ""))
		l.pendingErr = errInjected
		if _, err := SummarizeLedger(l); !errors.Is(err, errInjected) {
			t.Fatalf("unlistable pending records: %v", err)
		}
	})
	t.Run("reading fails", func(t *testing.T) {
		l := setup(t, recordBody(2, ""))
		l.readPendingErr = errInjected
		if _, err := SummarizeLedger(l); !errors.Is(err, errInjected) {
			t.Fatalf("an unreadable pending record: %v", err)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		l := setup(t, `not a record`)
		if _, err := SummarizeLedger(l); !isIntegrity(err) || !strings.Contains(err.Error(), "cannot be read") {
			t.Fatalf("a damaged pending record: %v", err)
		}
	})
}

// A record that vanishes while the summary reads (a compaction removed it after writing a
// baseline that holds it) makes the summary start again, and the second pass reads the baseline.
// One that stays missing is damage after a few attempts.
func TestSummarizeLedgerStartsAgainWhenRecordsVanish(t *testing.T) {
	r1, r2 := tree.Sum([]byte("1")), tree.Sum([]byte("2"))
	for _, n := range []int{1, 2} { // the vanished record read by the main pass, and by the baseline search
		t.Run(fmt.Sprint(n, " records"), func(t *testing.T) {
			recs := newRecords(t)
			var old []string
			for i := range n {
				old = append(old, commitRecord(t, recs, uint64(i+1), recordBody(uint64(i+1), cpChange(fmt.Sprint("c", i), quoted(r1), int64(i+1)))))
			}
			l := &summaryLedger{Records: recs, hook: func() {
				// The compaction: a baseline holding everything, then the older records go.
				commitRecord(t, recs, 10, `{"format":1,"seq":10,"schema":1,"baseline":true,"changes":[`+cpChange("c0", quoted(r2), 5)+`]}`)
				for _, o := range old {
					if err := recs.Remove(o); err != nil {
						t.Error(err)
					}
				}
			}}
			s, err := SummarizeLedger(l)
			if err != nil || s.Records != 1 || !slices.Equal(s.Roots, []tree.Hash{r2}) {
				t.Fatalf("after a compaction meanwhile: %v, %d records, roots %v", err, s.Records, s.Roots)
			}
			if l.lists != 2 {
				t.Fatalf("listed %d times, want 2", l.lists)
			}
		})
	}
	t.Run("missing for good", func(t *testing.T) {
		recs := newRecords(t)
		name := commitRecord(t, recs, 1, recordBody(1, cpChange("c", quoted(r1), 1)))
		l := &summaryLedger{Records: recs, hook: func() {}}
		if err := recs.Remove(name); err != nil {
			t.Fatal(err)
		}
		// Listed but gone: a ledger whose listing is stale every time.
		stale := &staleLedger{summaryLedger: l, names: []string{name}}
		_, err := SummarizeLedger(stale)
		if !isIntegrity(err) || !strings.Contains(err.Error(), "is missing") || stale.lists != summaryAttempts {
			t.Fatalf("a record missing for good: %v after %d listings", err, stale.lists)
		}
	})
	t.Run("listing fails", func(t *testing.T) {
		l := &faultyLedger{Records: newRecords(t), committed: true}
		if _, err := SummarizeLedger(l); !errors.Is(err, errInjected) {
			t.Fatalf("unlistable records: %v", err)
		}
	})
}

// staleLedger lists names whatever the directory holds.
type staleLedger struct {
	*summaryLedger
	names []string
}

func (s *staleLedger) Committed() ([]string, error) {
	s.lists++
	return s.names, nil
}
