package persistence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// LedgerState is what a workspace's committed records say once replayed (from the newest
// baseline): its checkpoints and recorded attempts. A shared store's gc keeps it in its summary
// (see package storeindex) with the names it was replayed from, so that a later reading replays
// only the records committed since (AdvanceLedger), and one of an unchanged workspace reads none.
//
// Invariant: a state is only ever used for exactly the record names it was replayed from
// (Names, Digest): records are immutable and named by their content's hash, so the same names mean
// the same history. Anything else (a record removed, a new baseline that compacted older ones) is
// replayed again from the records.
type LedgerState struct {
	Checkpoints map[string]CheckpointState `json:"checkpoints"`
	Attempts    map[string]AttemptState    `json:"attempts"`
	// Records counts the records replayed since the newest baseline.
	Records int `json:"records"`
	// Names counts the committed record names the state was replayed from (all of them, baselines
	// and the records before them included); Digest is NamesDigest of those names.
	Names  int    `json:"names"`
	Digest string `json:"digest"`
}

// CheckpointState is a checkpoint as the records hold it.
type CheckpointState struct {
	Root    tree.Hash `json:"root"`
	Created int64     `json:"created_ns"`
	Type    string    `json:"type,omitempty"`
	Note    string    `json:"note,omitempty"`
	Pinned  bool      `json:"pinned,omitempty"`
}

// AttemptState is a recorded attempt's result.
type AttemptState struct {
	Result tree.Hash `json:"result"`
	// Removed is set once the attempt is reverted: its result needs no keeping.
	Removed bool `json:"removed,omitempty"`
}

// NamesDigest is the SHA-256 of names, in order, one a line.
func NamesDigest(names []string) string {
	h := sha256.New()
	for _, n := range names {
		_, _ = h.Write([]byte(n + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Covers says whether the state was replayed from a prefix of names (all of them, or the first
// of them with newer ones after): those records are the state's, and only the rest need reading.
func (st *LedgerState) Covers(names []string) bool {
	return st != nil && st.Names <= len(names) && st.Digest == NamesDigest(names[:st.Names])
}

// AdvanceLedger replays the committed records names (as l.Committed lists them) into a state.
// Given prior, a state that Covers names, it reads only the records after those prior was
// replayed from (a baseline among them starts the state afresh); otherwise it replays from the
// newest baseline. A record that vanished (compacted meanwhile) is reported as such, for the
// caller to list again.
func AdvanceLedger(l Ledger, names []string, prior *LedgerState) (*LedgerState, error) {
	st := &LedgerState{Checkpoints: map[string]CheckpointState{}, Attempts: map[string]AttemptState{}}
	from := 0
	if prior.Covers(names) {
		st.Checkpoints, st.Attempts, st.Records = maps.Clone(prior.Checkpoints), maps.Clone(prior.Attempts), prior.Records
		if st.Checkpoints == nil {
			st.Checkpoints = map[string]CheckpointState{}
		}
		if st.Attempts == nil {
			st.Attempts = map[string]AttemptState{}
		}
		from = prior.Names
	} else {
		start, err := lastBaseline(l, names)
		if err != nil {
			return nil, vanished(err)
		}
		from = start
	}
	for _, name := range names[from:] {
		b, err := l.Read(name)
		if err != nil {
			return nil, vanished(err)
		}
		rec, err := decodeRecord(name, b)
		if err != nil {
			return nil, err
		}
		if rec.Baseline {
			st.Checkpoints, st.Attempts, st.Records = map[string]CheckpointState{}, map[string]AttemptState{}, 0
		}
		for _, c := range rec.Changes {
			if err := st.apply(c); err != nil {
				return nil, fault.Wrap(fault.ErrIntegrity, err, "record %s", name)
			}
		}
		st.Records++
	}
	st.Names, st.Digest = len(names), NamesDigest(names)
	return st, nil
}

// Summary is what the state says of the workspace (its pending records aside).
func (st *LedgerState) Summary() LedgerSummary {
	s := LedgerSummary{Records: st.Records}
	for id, cp := range st.Checkpoints {
		s.Roots = append(s.Roots, cp.Root)
		s.Checkpoints++
		t := time.Unix(0, cp.Created).UTC()
		if t.After(s.LastCheckpoint) {
			s.LastCheckpoint = t
		}
		s.List = append(s.List, CheckpointSummary{ID: id, Type: cp.Type, Note: cp.Note, Root: cp.Root, CreatedAt: t, Pinned: cp.Pinned})
	}
	slices.SortFunc(s.List, func(a, b CheckpointSummary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, a := range st.Attempts {
		if !a.Removed && !a.Result.IsZero() {
			s.Roots = append(s.Roots, a.Result)
		}
	}
	sortHashes(s.Roots)
	return s
}

// PinnedRoots are the roots of the pinned checkpoints: what a retired workspace still keeps.
func (st *LedgerState) PinnedRoots() []tree.Hash {
	var out []tree.Hash
	for _, cp := range st.Checkpoints {
		if cp.Pinned {
			out = append(out, cp.Root)
		}
	}
	sortHashes(out)
	return out
}

// RecordTrees lists every tree the committed record name names, whatever became of it later: a
// retired workspace keeps what records written after its retirement name (a command that opened
// it before may still have committed).
func RecordTrees(l Ledger, name string) ([]tree.Hash, error) {
	b, err := l.Read(name)
	if err != nil {
		return nil, err
	}
	rec, err := decodeRecord(name, b)
	if err != nil {
		return nil, err
	}
	var out []tree.Hash
	for _, c := range rec.Changes {
		out = append(out, treesIn(c)...)
	}
	return out, nil
}

// apply folds one change into the checkpoints and attempts known so far. Deleting a plan or a
// decision is not followed down to its attempts: keeping their results a little longer only keeps
// objects, never loses one.
func (st *LedgerState) apply(c change) error {
	switch c.Kind {
	case "checkpoint":
		if c.Deleted {
			delete(st.Checkpoints, c.Key)
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
			st.Checkpoints[c.Key] = CheckpointState{Root: root, Created: ns, Type: typ, Note: note, Pinned: truthy(row["pinned"])}
		}
	case "attempt", "plan":
		if c.Deleted && c.Kind == "attempt" {
			delete(st.Attempts, c.Key)
			return nil
		}
		if c.Kind == "plan" { // a whole plan, as the first records held it
			for k := range st.Attempts {
				if strings.HasPrefix(k, c.Key+"/") {
					delete(st.Attempts, k)
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
			st.Attempts[key] = AttemptState{Result: result, Removed: status == "reverted"}
		}
	}
	return nil
}

// truthy reads a flag column as a record holds it: a number (SQLite, PostgreSQL integers) or a
// boolean.
func truthy(v any) bool {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return err == nil && n != 0
	case bool:
		return x
	}
	return false
}
