package maintenance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// HealStore re-stores every damaged or missing object for which an intact copy exists, and
// retires the damage it made harmless. The caller holds the workspace lock. It reads every stored
// byte first, so damage no verify has seen yet is found too. Intact copies come from the live
// workspace (a snapshot stores afresh whatever it cannot deduplicate onto) and from the archived
// artifacts of corrections.
func HealStore(ctx context.Context, l workspace.Layout, s *objectstore.Store) (objectstore.HealReport, error) {
	if _, err := s.ScanPacks(); err != nil {
		return objectstore.HealReport{}, err
	}
	untrusted := s.Untrusted()
	if _, err := workspace.NewScanner(l, s).Snapshot(ctx, nil); err != nil {
		return objectstore.HealReport{}, fmt.Errorf("read the workspace for intact copies: %w", err)
	}
	if err := healFromArchive(l.Archive(), s); err != nil {
		return objectstore.HealReport{}, fmt.Errorf("read the archive for intact copies: %w", err)
	}
	rep, err := s.RetireHealed()
	if err == nil {
		rep = healedSince(rep, untrusted, s)
	}
	return rep, err
}

// healedSince adds to rep what the repair healed or did not among untrusted, the objects that had
// no copy to trust before it: one that has one now is healed, though no copy of it was damaged (a
// delta whose base was), and one that still has none is not.
func healedSince(rep objectstore.HealReport, untrusted []tree.Hash, s *objectstore.Store) objectstore.HealReport {
	reported := map[tree.Hash]bool{}
	for _, h := range slices.Concat(rep.Healed, rep.Unhealed, rep.Spent) {
		reported[h] = true
	}
	still := map[tree.Hash]bool{}
	for _, h := range s.Untrusted() {
		still[h] = true
	}
	for _, h := range untrusted {
		switch {
		case reported[h]:
		case still[h]:
			rep.Unhealed = append(rep.Unhealed, h)
		default:
			rep.Healed = append(rep.Healed, h)
		}
	}
	byHash := func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) }
	slices.SortFunc(rep.Healed, byHash)
	slices.SortFunc(rep.Unhealed, byHash)
	return rep
}

// Heal is HealStore as a doctor finding: Problem is empty when there was nothing to heal.
func Heal(ctx context.Context, l workspace.Layout, s *objectstore.Store) Finding {
	f := Finding{Check: "store healing"}
	rep, err := HealStore(ctx, l, s)
	switch {
	case err != nil:
		f.Problem = err.Error()
	case len(rep.Unhealed) > 0:
		f.Problem = fmt.Sprintf("%d object(s) healed; %d have no intact copy anywhere (e.g. %s)", len(rep.Healed), len(rep.Unhealed), rep.Unhealed[0])
		f.Repair = "`plan verify` names the checkpoints that need them; delete those checkpoints, then `plan gc` (which alone removes those no checkpoint needs)"
	case len(rep.Healed) > 0:
		f.OK, f.Repaired = true, true
		f.Problem = fmt.Sprintf("%d damaged or missing object(s) healed from intact copies", len(rep.Healed))
		f.Repair = "stored afresh; the damaged copies were removed"
	default:
		f.OK = true
	}
	return f
}

// healFromArchive stores every archived artifact whose object needs a copy. Every regular file is
// a candidate, manifests included: the store is content-addressed, so a file is a copy of an object
// exactly when its hash says so, whatever its name (an artifact may well be called manifest.json).
func healFromArchive(dir string, s *objectstore.Store) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		h, size, err := hashFile(p)
		if err != nil || !s.NeedsCopy(h) {
			return err
		}
		f, err := os.Open(p) // #nosec -- an archived artifact under .plan
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		b := s.NewBatch()
		defer b.Abort()
		if _, err := b.PutBlob(f, h, size); err != nil {
			return err
		}
		return b.Commit()
	})
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func hashFile(p string) (tree.Hash, int64, error) {
	f, err := os.Open(p) // #nosec -- an archived artifact under .plan
	if err != nil {
		return tree.Hash{}, 0, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return tree.Hash(h.Sum(nil)), n, err
}

// Healer is the store's repair as the maintenance use cases drive it (port.StoreHealer): HealStore
// on one workspace's layout and store.
type Healer struct {
	layout workspace.Layout
	store  *objectstore.Store
}

// NewHealer returns the repair of the store s of the workspace laid out as l.
func NewHealer(l workspace.Layout, s *objectstore.Store) *Healer { return &Healer{layout: l, store: s} }

var _ port.StoreHealer = (*Healer)(nil)

// Heal runs HealStore; the caller holds the workspace lock.
func (h *Healer) Heal(ctx context.Context) (port.HealReport, error) {
	r, err := HealStore(ctx, h.layout, h.store)
	return port.HealReport{
		Healed: r.Healed, Unhealed: r.Unhealed, Spent: r.Spent, PacksRewritten: r.PacksRewritten, IdxDropped: r.IdxDropped,
	}, err
}
