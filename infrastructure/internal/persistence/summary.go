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
	// Pinned is set for a checkpoint kept from every prune (and, its workspace retired, from gc).
	Pinned bool
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

// IsVanished says whether err is a record that vanished while being read: the workspace compacted
// its records meanwhile (a newer baseline holds them); list them again and start over.
func IsVanished(err error) bool { return errors.Is(err, errVanished) }

func summarize(l Ledger) (LedgerSummary, error) {
	names, err := l.Committed()
	if err != nil {
		return LedgerSummary{}, err
	}
	st, err := AdvanceLedger(l, names, nil)
	if err != nil {
		return LedgerSummary{}, err
	}
	s := st.Summary()
	if pr, ok := l.(PendingReader); ok {
		pending, err := l.Pending()
		if err != nil {
			return s, err
		}
		if s.MaybeRoots, err = PendingTrees(pr, pending); err != nil {
			return s, err
		}
	}
	return s, nil
}

// PendingTrees lists every tree the pending records names name (their transactions' fate is not
// known: they may be committing). A record committed or discarded since it was listed is skipped.
func PendingTrees(pr PendingReader, names []string) ([]tree.Hash, error) {
	var out []tree.Hash
	for _, name := range names {
		b, err := pr.ReadPending(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // committed or discarded meanwhile: the committed records say what counts
		}
		if err != nil {
			return nil, err
		}
		rec, err := decodeRecord(name, b)
		if err != nil {
			return nil, err
		}
		for _, c := range rec.Changes {
			out = append(out, treesIn(c)...)
		}
	}
	sortHashes(out)
	return out, nil
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
