package persistence

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/planhq/plan/domain/fault"
)

// LedgerHole says what is missing from the history l holds, "" when nothing is: the records from
// the newest baseline (or from the first, number 1) on must follow each other without a gap, the
// pending ones filling in for those whose commit a crash cut short. A transaction numbers its
// record one past the newest, and one that fails leaves no committed record, so a gap means
// records deleted (by hand, or lost with the store). A gc of a shared store reads only records:
// it must not collect for a workspace whose history has a hole, since what the missing records
// kept live is not known. It reads only and needs no lock; an empty history is no hole (the caller
// knows whether the workspace should have one).
func LedgerHole(l Ledger) (string, error) {
	var err error
	for range summaryAttempts {
		var hole string
		if hole, err = ledgerHole(l); err == nil || !errors.Is(err, errVanished) {
			return hole, err
		}
	}
	return "", err
}

func ledgerHole(l Ledger) (string, error) {
	// The high-water mark before any listing: every record at or below it was committed before it
	// was written, so the listings made after it show them all (read after them, it could count
	// commits made meanwhile that they missed).
	head, hasHead, err := ledgerHead(l)
	if err != nil {
		return "", err
	}
	// Pending first: a record committed between the two listings is then seen in one of them.
	pending, err := l.Pending()
	if err != nil {
		return "", err
	}
	names, err := l.Committed()
	if err != nil || len(names) == 0 {
		return "", err
	}
	start, err := lastBaseline(l, names)
	if err != nil {
		return "", vanished(err)
	}
	// The ledger lists only well-formed names: their numbers parse.
	first, _ := recordSeq(names[start])
	if start == 0 && first != 1 {
		b, err := l.Read(names[0])
		if err != nil {
			return "", vanished(err)
		}
		var head struct {
			Baseline bool `json:"baseline"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return "", fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be read", names[0])
		}
		if !head.Baseline {
			return fmt.Sprintf("its records before number %d are missing", first), nil
		}
	}
	have := map[uint64]bool{}
	for _, n := range append(names[start:], pending...) {
		seq, _ := recordSeq(n)
		have[seq] = true
	}
	last, _ := recordSeq(names[len(names)-1])
	// The newest records deleted leave no gap in what is left: only the workspace's high-water
	// mark (a shared store keeps one) shows them.
	if hasHead && head > max(last, maxPending(pending)) {
		return fmt.Sprintf("its newest records are missing (it committed number %d; the newest left is number %d)", head, last), nil
	}
	var gone []uint64
	for seq := first; seq <= last; seq++ {
		if !have[seq] {
			gone = append(gone, seq)
		}
	}
	if len(gone) > 0 {
		return fmt.Sprintf("%d of its records between number %d and %d are missing (the first: number %d)", len(gone), first, last, gone[0]), nil
	}
	return "", nil
}

// ledgerHead reads l's high-water mark, when it keeps one (a shared store's records do).
func ledgerHead(l Ledger) (uint64, bool, error) {
	hk, ok := l.(interface {
		Head() (uint64, bool, error)
	})
	if !ok {
		return 0, false, nil
	}
	return hk.Head()
}

// maxPending is the highest number among pending record names (0 for none).
func maxPending(pending []string) uint64 {
	var m uint64
	for _, n := range pending {
		if seq, err := recordSeq(n); err == nil && seq > m {
			m = seq
		}
	}
	return m
}
