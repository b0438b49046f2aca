package objectstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// A private store's transactions never fail on gc state: its gc runs under the workspace lock, so
// Confirm has nothing to check, even for an object a gc has since deleted.
func TestOS2ConfirmOfAPrivateStoreChecksNothing(t *testing.T) {
	s := TestStore(t)
	_, hs := os2Put(t, s, text(30, 2000))
	s.Rely(set(hs...))
	if res, err := s.GC(set()); err != nil || res.PacksDeleted != 1 {
		t.Fatalf("GC: %+v, %v", res, err)
	}
	r, err := OpenRecords(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	r.Confirm = s.Confirm
	name, err := r.Prepare(1, []byte("tx"))
	if err != nil {
		t.Fatalf("Prepare in a private store: %v", err)
	}
	if p, err := r.Pending(); err != nil || !slices.Equal(p, []string{name}) {
		t.Fatalf("pending: %v, %v", p, err)
	}
}

// When a writer cannot check the objects its transaction relies on (the store cannot be listed,
// a mark is damaged or unreadable, the marks cannot be listed), the transaction fails: Prepare
// returns the error, and the record is discarded, so nothing is committed on an unchecked base.
func TestOS2ConfirmThatCannotCheckFailsTheTransaction(t *testing.T) {
	for name, c := range map[string]struct {
		arm       func(t *testing.T, be *os2Backend)
		want      string
		integrity bool
	}{
		"the packs cannot be listed": {
			arm:  func(_ *testing.T, be *os2Backend) { be.on("List", func(n string) bool { return n == "packs" }) },
			want: "check the objects this change references",
		},
		"the marks cannot be listed": {
			arm:  func(_ *testing.T, be *os2Backend) { be.on("List", func(n string) bool { return n == marksDir }) },
			want: "read the gc marks",
		},
		"a new mark cannot be read": {
			arm: func(t *testing.T, be *os2Backend) {
				m := os2WriteMark(t, be, time.Now(), os2MarkJSON(t, time.Now()))
				be.on("ReadFile", func(n string) bool { return n == marksDir+"/"+m })
			},
			want: "read the gc mark ",
		},
		"a new mark is damaged": {
			arm:       func(t *testing.T, be *os2Backend) { os2WriteMark(t, be, time.Now(), `{"format":1,"packs":["x"]}`) },
			want:      "is damaged",
			integrity: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			be, s := os2New(t, true)
			d := text(31, 3000)
			_, hs := os2Put(t, s, d)
			r := NewRecords(be, WorkspaceRecords("w"))
			r.Confirm = s.Confirm
			c.arm(t, be)
			_, err := r.Prepare(1, []byte("tx"))
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, fault.ErrIntegrity) != c.integrity {
				t.Fatalf("Prepare: %v (want %q, integrity %v)", err, c.want, c.integrity)
			}
			if !c.integrity && !errors.Is(err, errOS2IO) {
				t.Fatalf("Prepare: %v (want the I/O error)", err)
			}
			be.setHook(nil)
			if p, err := r.Pending(); err != nil || len(p) != 0 {
				t.Fatalf("pending after the failed confirm: %v, %v (want the record discarded)", p, err)
			}
			if c, err := r.Committed(); err != nil || len(c) != 0 {
				t.Fatalf("committed: %v, %v", c, err)
			}
			mustRead(t, s, hs[0], d)
		})
	}
}

// os2Condemned stores a checkpoint in a writer's store, then has another workspace's gc condemn
// its pack before the writer confirms (the writer's record was not visible to that gc).
func os2Condemned(t *testing.T) (be *os2Backend, w, g *Store, hs []tree.Hash, d []byte, pack string) {
	t.Helper()
	be, w = os2New(t, true)
	d = text(32, 3000)
	_, hs = os2Put(t, w, d)
	pack = os2PackOf(t, w, hs[0])
	g = os2Open(t, be)
	be.advance(2 * time.Hour)
	if res, err := g.SharedGC(os2Live(), time.Hour); err != nil || res.PacksCondemned != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	return be, w, g, hs, d, pack
}

// A writer whose objects are condemned copies them when it confirms; when the copy cannot be made
// because the condemned copy is damaged, cut short, or swept meanwhile, the transaction fails
// with a conflict (the command can be run again) and writes no pack; an I/O error opening the pack
// is that error, not a conflict. No copy is made of damaged bytes.
func TestOS2ConfirmRescueThatCannotCopy(t *testing.T) {
	for name, c := range map[string]struct {
		arm      func(t *testing.T, be *os2Backend, w *Store, h tree.Hash, pack string)
		conflict bool
	}{
		"the condemned copy is damaged": {conflict: true,
			arm: func(t *testing.T, _ *os2Backend, w *Store, h tree.Hash, _ string) { flipData(t, w, h, 10) }},
		"the condemned pack is cut short": {conflict: true,
			arm: func(t *testing.T, be *os2Backend, w *Store, _ tree.Hash, pack string) {
				p := filepath.Join(be.Root(), packName(pack))
				// Cut in the middle of the data of the record the rescue copies first.
				var first []tree.Hash
				for h := range w.relied {
					first = append(first, h)
				}
				slices.SortFunc(first, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
				l, _ := w.lookup(first[0])
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, l.offset+maxRecordHeader+l.comp/2); err != nil {
					t.Fatal(err)
				}
			}},
		"the condemned pack is swept meanwhile": {conflict: true,
			arm: func(t *testing.T, be *os2Backend, _ *Store, _ tree.Hash, pack string) {
				be.setHook(func(op, name string) error {
					if op == "Open" && name == packName(pack) {
						// Another gc's sweep, between the writer's listing and its copy.
						for _, n := range []string{idxName(pack), packName(pack)} {
							if err := os.Remove(filepath.Join(be.Root(), n)); err != nil {
								t.Error(err)
							}
						}
					}
					return nil
				})
			}},
		"the data cannot be read": {conflict: true,
			arm: func(_ *testing.T, be *os2Backend, _ *Store, _ tree.Hash, pack string) {
				be.wrapOpen = func(name string, f File) File {
					if name != packName(pack) {
						return f
					}
					return &os2FailingFile{File: f} // the record header reads, its data does not
				}
			}},
		"the pack cannot be opened": {conflict: false,
			arm: func(_ *testing.T, be *os2Backend, _ *Store, _ tree.Hash, pack string) {
				be.on("Open", func(n string) bool { return n == packName(pack) })
			}},
	} {
		t.Run(name, func(t *testing.T) {
			be, w, _, hs, _, pack := os2Condemned(t)
			c.arm(t, be, w, hs[0], pack)
			packs := os2Names(t, be, "packs")
			err := w.Confirm()
			if c.conflict && (!errors.Is(err, fault.ErrConflict) || fault.Kind(err) != fault.ErrConflict) {
				t.Fatalf("Confirm: %v (want a conflict)", err)
			}
			if !c.conflict && (!errors.Is(err, errOS2IO) || errors.Is(err, fault.ErrConflict)) {
				t.Fatalf("Confirm: %v (want the I/O error, not a conflict)", err)
			}
			for _, n := range os2Names(t, be, "packs") {
				if !slices.Contains(packs, n) {
					t.Fatalf("the failed rescue left a pack: %s", n)
				}
			}
		})
	}
}

// A writer's record is visible while its objects' pack is condemned, and a gc without grace
// condemns every fresh copy the writer makes moments after its upload: Confirm copies three
// times, then gives up with a conflict rather than loop; every copy is still there (condemned, not
// deleted), so another workspace still reads the objects.
func TestOS2ConfirmGivesUpWhenEveryCopyIsCondemned(t *testing.T) {
	be, w, g, hs, d, _ := os2Condemned(t)
	gcs := 0
	w.Failpoint = func(name string) error {
		if name != "store.pack-installed" {
			return nil
		}
		// The copy's pack is visible, its idx not yet: the racing gc condemns it as an orphan.
		gcs++
		res, err := g.SharedGC(os2Live(), time.Hour)
		if err != nil || res.PacksCondemned != 1 {
			t.Errorf("the racing gc: %+v, %v", res, err)
		}
		return nil
	}
	err := w.Confirm()
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "keeps condemning") {
		t.Fatalf("Confirm: %v (want a conflict)", err)
	}
	if gcs != confirmRounds {
		t.Fatalf("%d copies made, want %d", gcs, confirmRounds)
	}
	if n := len(os2Names(t, be, "packs")); n != 2*(1+confirmRounds) {
		t.Fatalf("%d pack files, want the original and every copy", n)
	}
	if n := len(os2Names(t, be, marksDir)); n != 1+confirmRounds {
		t.Fatalf("%d marks, want %d", n, 1+confirmRounds)
	}
	r := os2Open(t, be)
	mustRead(t, r, hs[0], d)
	if r.Present(hs[0]) {
		t.Fatal("an object whose every copy is condemned is Present")
	}
}

// A mark that vanishes between the writer's listing and its read (a sweep that kept the pack,
// since the writer's record is visible, and removed the mark) condemns nothing: Confirm finds the
// objects Present and copies nothing.
func TestOS2ConfirmWhenAMarkIsSweptWhileRead(t *testing.T) {
	be, w := os2New(t, true)
	d := text(33, 3000)
	_, hs := os2Put(t, w, d)
	g := os2Open(t, be)
	be.advance(2 * time.Hour)
	if res, err := g.SharedGC(os2Live(), time.Hour); err != nil || res.PacksCondemned != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	marks := os2Names(t, be, marksDir)
	be.setHook(func(op, name string) error {
		if op == "ReadFile" && strings.HasPrefix(name, marksDir+"/") {
			if err := os.Remove(filepath.Join(be.Root(), name)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	packs := os2Names(t, be, "packs")
	if err := w.Confirm(); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	if len(marks) != 1 || len(os2Names(t, be, marksDir)) != 0 {
		t.Fatalf("marks before %v, after %v", marks, os2Names(t, be, marksDir))
	}
	if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
		t.Fatalf("packs: %v, want %v (nothing to copy)", got, packs)
	}
	if !w.Present(hs[0]) {
		t.Fatal("the object is not Present once its mark is gone")
	}
	mustRead(t, w, hs[0], d)
}
