package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// LedgerSummary is what a workspace's records say without a database: what a gc of a shared
// store must keep for it, and what `plan workspaces` shows.
type LedgerSummary struct {
	// Roots are the trees the committed history keeps live: every checkpoint's root and every
	// recorded attempt result that is not reverted (what the workspace's own gc keeps).
	Roots []tree.Hash
	// MaybeRoots are the trees pending records name: transactions that may be committing right
	// now, or that failed (their objects may be gone).
	MaybeRoots []tree.Hash
	// Checkpoints counts the checkpoints; LastCheckpoint is when the newest was created.
	Checkpoints    int
	LastCheckpoint time.Time
	Records        int
	// List is every checkpoint, newest first.
	List []CheckpointSummary
}

// CheckpointSummary is a checkpoint as its records hold it.
type CheckpointSummary struct {
	ID        string
	Type      string
	Note      string
	Root      tree.Hash
	CreatedAt time.Time
}

// PendingReader is the part of a ledger that reads records not yet committed (objectstore.Records
// implements it); SummarizeLedger reads them when the ledger can.
type PendingReader interface {
	ReadPending(name string) ([]byte, error)
}

// summaryAttempts bounds how often SummarizeLedger starts again when a record it listed vanished
// (the workspace compacted its ledger meanwhile: a newer baseline now holds everything).
const summaryAttempts = 3

// SummarizeLedger replays l's records (from the newest baseline) into a LedgerSummary. It only
// reads, needs no lock, and tolerates a workspace writing or compacting at the same time.
func SummarizeLedger(l Ledger) (LedgerSummary, error) {
	var err error
	for range summaryAttempts {
		var s LedgerSummary
		if s, err = summarize(l); err == nil || !errors.Is(err, errVanished) {
			return s, err
		}
	}
	return LedgerSummary{}, err
}

var errVanished = errors.New("a record vanished while being read")

type checkpointState struct {
	root      tree.Hash
	created   int64
	typ, note string
}

type attemptState struct {
	result  tree.Hash
	removed bool // reverted: its result needs no keeping
}

func summarize(l Ledger) (LedgerSummary, error) {
	var s LedgerSummary
	names, err := l.Committed()
	if err != nil {
		return s, err
	}
	start, err := lastBaseline(l, names)
	if err != nil {
		return s, vanished(err)
	}
	cps := map[string]checkpointState{}
	attempts := map[string]attemptState{}
	for _, name := range names[start:] {
		b, err := l.Read(name)
		if err != nil {
			return s, vanished(err)
		}
		rec, err := decodeRecord(name, b)
		if err != nil {
			return s, err
		}
		for _, c := range rec.Changes {
			if err := applySummary(cps, attempts, c); err != nil {
				return s, fault.Wrap(fault.ErrIntegrity, err, "record %s", name)
			}
		}
		s.Records++
	}
	for id, cp := range cps {
		s.Roots = append(s.Roots, cp.root)
		s.Checkpoints++
		t := time.Unix(0, cp.created).UTC()
		if t.After(s.LastCheckpoint) {
			s.LastCheckpoint = t
		}
		s.List = append(s.List, CheckpointSummary{ID: id, Type: cp.typ, Note: cp.note, Root: cp.root, CreatedAt: t})
	}
	slices.SortFunc(s.List, func(a, b CheckpointSummary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, a := range attempts {
		if !a.removed && !a.result.IsZero() {
			s.Roots = append(s.Roots, a.result)
		}
	}
	if pr, ok := l.(PendingReader); ok {
		pending, err := l.Pending()
		if err != nil {
			return s, err
		}
		for _, name := range pending {
			b, err := pr.ReadPending(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // committed or discarded meanwhile: the committed records say what counts
			}
			if err != nil {
				return s, err
			}
			rec, err := decodeRecord(name, b)
			if err != nil {
				return s, err
			}
			for _, c := range rec.Changes {
				s.MaybeRoots = append(s.MaybeRoots, treesIn(c)...)
			}
		}
	}
	sortHashes(s.Roots)
	sortHashes(s.MaybeRoots)
	return s, nil
}

// vanished marks a missing record as a reason to start again rather than damage: a compaction
// removes records only after writing a baseline that holds them.
func vanished(err error) error {
	if errors.Is(err, fault.ErrIntegrity) && strings.Contains(err.Error(), "is missing") {
		return fmt.Errorf("%w: %w", errVanished, err)
	}
	return err
}

func decodeRecord(name string, b []byte) (record, error) {
	var rec record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		return rec, fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be read", name)
	}
	if rec.Format != recordFormat || rec.Schema > latestSchema() {
		return rec, fault.Conflict("record %s was written by a newer plan (format %d, schema %d): upgrade plan", name, rec.Format, rec.Schema)
	}
	return rec, nil
}

// applySummary folds one change into the checkpoints and attempts known so far. Deleting a plan
// or a decision is not followed down to its attempts: keeping their results a little longer only
// keeps objects, never loses one.
func applySummary(cps map[string]checkpointState, attempts map[string]attemptState, c change) error {
	switch c.Kind {
	case "checkpoint":
		if c.Deleted {
			delete(cps, c.Key)
			return nil
		}
		for _, row := range c.Rows["checkpoints"] {
			root, err := hashColumn(row, "root_tree")
			if err != nil {
				return err
			}
			created, _ := row["created_at"].(json.Number)
			ns, _ := created.Int64()
			typ, _ := row["type"].(string)
			note, _ := row["note"].(string)
			cps[c.Key] = checkpointState{root: root, created: ns, typ: typ, note: note}
		}
	case "attempt", "plan":
		if c.Deleted && c.Kind == "attempt" {
			delete(attempts, c.Key)
			return nil
		}
		if c.Kind == "plan" { // a whole plan, as the first records held it
			for k := range attempts {
				if strings.HasPrefix(k, c.Key+"/") {
					delete(attempts, k)
				}
			}
		}
		for _, row := range c.Rows["attempts"] {
			result, err := hashColumn(row, "result_tree")
			if err != nil {
				return err
			}
			status, _ := row["status"].(string)
			key := fmt.Sprintf("%v/%v/%v", row["plan_id"], row["decision_id"], row["number"])
			attempts[key] = attemptState{result: result, removed: status == "reverted"}
		}
	}
	return nil
}

// treesIn lists every tree a change's rows name (for pending records, whose fate is unknown).
func treesIn(c change) []tree.Hash {
	var out []tree.Hash
	for _, rows := range c.Rows {
		for _, row := range rows {
			for _, col := range []string{"root_tree", "result_tree"} {
				if h, err := hashColumn(row, col); err == nil && !h.IsZero() {
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// hashColumn reads a tree hash column ("" is none).
func hashColumn(row map[string]any, col string) (tree.Hash, error) {
	var h tree.Hash
	v, ok := row[col]
	if !ok || v == nil {
		return h, nil
	}
	s, ok := v.(string)
	if !ok {
		return h, fmt.Errorf("column %s is not text", col)
	}
	if s == "" {
		return h, nil
	}
	if err := h.UnmarshalText([]byte(s)); err != nil {
		return h, fmt.Errorf("column %s: %w", col, err)
	}
	return h, nil
}

func sortHashes(hs []tree.Hash) {
	slices.SortFunc(hs, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
}
