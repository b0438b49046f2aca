package objectstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
)

// A shared store is collected without any lock in common with the workspaces writing to it. GC
// deletes in two phases, like kopia's and rustic's lock-free maintenance:
//
//  1. mark: with a live set computed from every workspace's records, GC copies the live records of
//     sparse packs into new packs and writes a mark, gc/<time>-<random>.json, naming the packs that
//     then hold nothing live. From the moment the mark is visible those packs are condemned: every
//     reader still reads them, but no writer deduplicates onto them (Present is false), so new
//     checkpoints store fresh copies;
//  2. sweep: a later GC, once the mark is older than the grace period by the store's clock,
//     computes the live set again and deletes each condemned pack that still holds nothing live
//     that exists nowhere else (idx first, then the pack), then removes the mark. A pack a writer
//     came to depend on in between is simply kept.
//
// What makes it safe is the writers' rule (Confirm): a transaction that references objects makes
// its record visible first, and only then checks that each object it relied on has a copy in a
// pack that exists and is not condemned, rescuing (copying) or giving up otherwise. A sweep
// computes its live set after its mark was visible; so either the writer saw the mark, or the
// mark came after the writer's record, and then the sweep's live set includes that record. The
// grace period is not needed for safety: it keeps GC from condemning packs that uploads still in
// flight are about to reference (which would only make those writers copy again), and bounds how
// long a condemned pack lingers.
const marksDir = "gc"

// markFile is what a mark holds.
type markFile struct {
	Format  int       `json:"format"`
	Created time.Time `json:"created"`
	Packs   []string  `json:"packs"`
}

// mark is a mark as read: its name, the store's time it was written at (by the store's clock,
// as Now tells it), and its packs.
type mark struct {
	name  string
	at    time.Time
	packs []string
}

func validMarkName(name string) bool {
	base, ok := strings.CutSuffix(name, ".json")
	stamp, rnd, found := strings.Cut(base, "-")
	if !ok || !found || len(stamp) != 13 || len(rnd) != 16 {
		return false
	}
	for _, c := range stamp + rnd {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readMarks lists the store's marks, reading the ones not seen before (marks are immutable, so
// known ones come from memory).
func (s *Store) readMarks() ([]mark, error) {
	if !s.shared {
		return nil, nil
	}
	files, err := s.be.List(marksDir)
	if err != nil {
		return nil, fmt.Errorf("read the gc marks: %w", err)
	}
	var out []mark
	for _, fi := range files {
		if fi.Dir || !validMarkName(fi.Name) {
			continue
		}
		s.baseMu.Lock()
		m, known := s.markCache[fi.Name]
		s.baseMu.Unlock()
		if !known {
			b, err := s.be.ReadFile(marksDir + "/" + fi.Name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // swept since the listing
			}
			if err != nil {
				return nil, fmt.Errorf("read the gc mark %s: %w", s.be.Location(marksDir+"/"+fi.Name), err)
			}
			var mf markFile
			if err := json.Unmarshal(b, &mf); err != nil || mf.Format != 1 {
				// Written whole (one PUT or an atomic replace): a mark that does not parse is
				// damage. Refuse rather than guess which packs are condemned.
				return nil, fault.Integrity("the gc mark %s is damaged: run `plan doctor`", s.be.Location(marksDir+"/"+fi.Name))
			}
			for _, id := range mf.Packs {
				if !validPackID(id) {
					return nil, fault.Integrity("the gc mark %s is damaged (%q is no pack id): run `plan doctor`",
						s.be.Location(marksDir+"/"+fi.Name), id)
				}
			}
			m = mark{name: fi.Name, at: mf.Created, packs: mf.Packs}
			s.baseMu.Lock()
			s.markCache[fi.Name] = m
			s.baseMu.Unlock()
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b mark) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// condemnedBy is the set of packs the marks name.
func condemnedBy(marks []mark) map[string]bool {
	set := map[string]bool{}
	for _, m := range marks {
		for _, id := range m.packs {
			set[id] = true
		}
	}
	return set
}

// writeMark condemns the packs ids: once it returns, no writer that refreshes its index
// deduplicates onto them.
func (s *Store) writeMark(ids []string) (string, error) {
	now, err := s.be.Now()
	if err != nil {
		return "", err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("gc mark name: %w", err)
	}
	name := fmt.Sprintf("%013x-%s.json", now.UnixMilli(), hex.EncodeToString(rnd[:]))
	b, err := json.Marshal(markFile{Format: 1, Created: now.UTC(), Packs: ids})
	if err != nil {
		return "", err
	}
	if err := s.be.Create(marksDir+"/"+name, b, 0o400); err != nil {
		return "", fmt.Errorf("write the gc mark: %w", err)
	}
	s.baseMu.Lock()
	s.markCache[name] = mark{name: name, at: now.UTC(), packs: ids}
	s.baseMu.Unlock()
	return name, nil
}
