package objectstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// os2MarkJSON is what a gc of this version writes as a mark created at at, condemning ids.
func os2MarkJSON(t *testing.T, at time.Time, ids ...string) string {
	t.Helper()
	if ids == nil {
		ids = []string{}
	}
	b, err := json.Marshal(markFile{Format: 1, Created: at.UTC(), Packs: ids})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// os2FailList makes the nth listing of packs/ from now on fail (and only that one).
func os2FailList(be *os2Backend, n int) {
	var calls atomic.Int32
	be.setHook(func(op, name string) error {
		if op == "List" && name == "packs" && int(calls.Add(1)) == n {
			return errOS2IO
		}
		return nil
	})
}

// Each gc refuses the other kind of store, before it deletes anything: a private store is
// collected under its workspace's lock, a shared one only by the two-phase protocol.
func TestOS2EachGCRefusesTheOtherKindOfStore(t *testing.T) {
	priv := TestStore(t)
	d := text(1, 2000)
	_, hs := os2Put(t, priv, d)
	if _, err := priv.SharedGC(os2Live(), 0); err == nil || !strings.Contains(err.Error(), "not shared") {
		t.Fatalf("SharedGC of a private store: %v", err)
	}
	mustRead(t, priv, hs[0], d)

	be, sh := os2New(t, true)
	_, hs = os2Put(t, sh, d)
	packs := os2Names(t, be, "packs")
	if _, err := sh.GC(set()); err == nil || !strings.Contains(err.Error(), "SharedGC") {
		t.Fatalf("GC of a shared store: %v", err)
	}
	if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
		t.Fatalf("packs after the refused GC: %v, want %v", got, packs)
	}
	if got := os2Names(t, be, marksDir); len(got) != 0 {
		t.Fatalf("the refused GC wrote marks: %v", got)
	}
	mustRead(t, sh, hs[0], d)
}

// A mark that does not parse, is of a format this version does not know, or names something that
// is no pack id is damage: gc, a writer's confirm and a workspace opening the store all refuse
// with an integrity error naming the mark, rather than guess which packs are condemned; nothing
// is deleted and nothing is written.
func TestOS2DamagedMarkIsRefusedByEveryone(t *testing.T) {
	for name, body := range map[string]string{
		"not json":        "{",
		"a newer format":  `{"format":2,"created":"2024-01-01T00:00:00Z","packs":[]}`,
		"not a pack id":   `{"format":1,"created":"2024-01-01T00:00:00Z","packs":["../../records"]}`,
		"an empty object": `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			be, s := os2New(t, true)
			d := text(3, 3000)
			_, hs := os2Put(t, s, d) // dead (no root names it), and relied on by the batch
			packs := os2Names(t, be, "packs")
			mark := os2WriteMark(t, be, time.Now(), body)
			loc := be.Location(marksDir + "/" + mark)

			_, err := s.SharedGC(os2Live(), 0)
			faulttest.Require(t, err, fault.ErrIntegrity, "gc with a damaged mark")
			if !strings.Contains(err.Error(), loc) || !strings.Contains(err.Error(), "nothing was deleted") {
				t.Fatalf("gc error: %v (want the mark named, and that nothing was deleted)", err)
			}
			err = s.Confirm()
			faulttest.Require(t, err, fault.ErrIntegrity, "confirm with a damaged mark")
			if !strings.Contains(err.Error(), "check the objects this change references") || !strings.Contains(err.Error(), loc) {
				t.Fatalf("confirm error: %v", err)
			}
			if _, err := OpenBackend(be, t.TempDir()); !errors.Is(err, fault.ErrIntegrity) {
				t.Fatalf("opening a store with a damaged mark: %v", err)
			}
			if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
				t.Fatalf("packs after the refused gc: %v, want %v", got, packs)
			}
			if got := os2Names(t, be, marksDir); !slices.Equal(got, []string{mark}) {
				t.Fatalf("marks after the refused gc: %v", got)
			}
			mustRead(t, s, hs[0], d)
		})
	}
}

// Files in gc/ whose names are not marks' (upper-case or non-hex digits, another extension) are
// left alone and condemn nothing, even when they hold what a mark would.
func TestOS2FilesThatAreNoMarksCondemnNothing(t *testing.T) {
	be, s := os2New(t, true)
	d := text(4, 3000)
	root, hs := os2Put(t, s, d)
	body := os2MarkJSON(t, time.Now().Add(-48*time.Hour), os2PackOf(t, s, hs[0]))
	stamp := fmt.Sprintf("%013x", time.Now().Add(-48*time.Hour).UnixMilli())
	others := []string{stamp + "-0123456789ABCDEF.json", stamp + "-0123456789abcdeg.json", stamp + "-0123456789abcdef.txt", "notes.json"}
	if err := os.MkdirAll(filepath.Join(be.Root(), marksDir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range others {
		if err := os.WriteFile(filepath.Join(be.Root(), marksDir, n), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(be.Root(), marksDir, stamp+"-0123456789abcdef.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := s.SharedGC(os2Live(root), 0)
	if err != nil || res.MarksSwept != 0 || res.PacksKept != 0 || res.PacksDeleted != 0 {
		t.Fatalf("gc: %+v, %v (want nothing swept: there is no mark)", res, err)
	}
	if !s.Present(hs[0]) {
		t.Fatal("a file that is no mark condemned a pack")
	}
	slices.Sort(others)
	if got := os2Names(t, be, marksDir); !slices.Equal(got, others) {
		t.Fatalf("gc/ after the gc: %v, want %v untouched", got, others)
	}
}

// A mark from the future (written by a machine whose clock is ahead) is not yet due for a gc with
// a grace period, however long ago it was really written: the pack it condemns is kept, still
// read, and not deduplicated onto; a mark that is due is swept beside it, and a gc without grace
// sweeps the future one too.
func TestOS2MarkFromTheFuture(t *testing.T) {
	be, s := os2New(t, true)
	deadD, liveD := text(5, 3000), text(6, 3000)
	_, dead := os2Put(t, s, deadD)
	root, live := os2Put(t, s, liveD)
	deadPack := os2PackOf(t, s, dead[0])
	now := time.Now()
	future := os2WriteMark(t, be, now.Add(24*time.Hour), os2MarkJSON(t, now.Add(24*time.Hour), deadPack))
	os2WriteMark(t, be, now.Add(-2*time.Hour), os2MarkJSON(t, now.Add(-2*time.Hour)))

	res, err := s.SharedGC(os2Live(root), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.MarksSwept != 1 || res.MarksPending != 1 || res.PacksDeleted != 0 || res.PacksCondemned != 0 {
		t.Fatalf("gc with a grace period: %+v (want the old mark swept, the future one pending)", res)
	}
	if got := os2Names(t, be, marksDir); !slices.Equal(got, []string{future}) {
		t.Fatalf("marks left: %v, want only the future one", got)
	}
	if !os2HasPack(t, be, deadPack) {
		t.Fatal("the pack of a mark not yet due was deleted")
	}
	if s.Present(dead[0]) {
		t.Fatal("an object condemned by the future mark is deduplicated onto")
	}
	mustRead(t, s, dead[0], deadD)

	res, err = s.SharedGC(os2Live(root), 0)
	if err != nil || res.PacksDeleted != 1 || res.MarksSwept != 1 {
		t.Fatalf("gc without grace: %+v, %v (want the future mark swept)", res, err)
	}
	if os2HasPack(t, be, deadPack) {
		t.Fatal("the condemned pack survived its sweep")
	}
	mustRead(t, os2Open(t, be), live[0], liveD)
}

// A store clock that cannot be read, fails when the mark is written, or is past what a mark can
// record (year 10000) stops the gc before it condemns or deletes anything.
func TestOS2GCWhenTheStoreClockFails(t *testing.T) {
	for name, setup := range map[string]func(be *os2Backend){
		"unreadable": func(be *os2Backend) { be.on("Now", func(string) bool { return true }) },
		"fails when the mark is written": func(be *os2Backend) {
			var calls atomic.Int32
			be.setHook(func(op, _ string) error {
				if op == "Now" && calls.Add(1) > 1 {
					return errOS2IO
				}
				return nil
			})
		},
		"beyond year 9999": func(be *os2Backend) {
			be.clock = func() (time.Time, error) { return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), nil }
		},
	} {
		t.Run(name, func(t *testing.T) {
			be, s := os2New(t, true)
			d := text(7, 3000)
			_, hs := os2Put(t, s, d)
			packs := os2Names(t, be, "packs")
			setup(be)
			res, err := s.SharedGC(os2Live(), 0)
			if err == nil || res.PacksCondemned+res.PacksDeleted != 0 {
				t.Fatalf("gc with a failing clock: %+v, %v", res, err)
			}
			if name != "beyond year 9999" && !errors.Is(err, errOS2IO) {
				t.Fatalf("gc error: %v (want the clock's)", err)
			}
			if got := os2Names(t, be, marksDir); len(got) != 0 {
				t.Fatalf("marks written: %v", got)
			}
			if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
				t.Fatalf("packs: %v, want %v", got, packs)
			}
			if !s.Present(hs[0]) {
				t.Fatal("the dead object was condemned all the same")
			}
		})
	}
}

// When the live set cannot be computed (the records cannot be read, or the index cannot be read
// again after them), gc deletes and condemns nothing: the error says so.
func TestOS2GCStopsWhenTheLiveSetCannotBeComputed(t *testing.T) {
	errRecords := errors.New("the records cannot be read")
	failing := func() ([]tree.Hash, []tree.Hash, error) { return nil, nil, errRecords }

	t.Run("sweep", func(t *testing.T) {
		be, s := os2New(t, true)
		d := text(8, 3000)
		_, hs := os2Put(t, s, d)
		be.advance(2 * time.Hour)
		if res, err := s.SharedGC(os2Live(), time.Hour); err != nil || res.PacksCondemned != 1 || res.MarksPending != 1 {
			t.Fatalf("first gc: %+v, %v", res, err)
		}
		marks := os2Names(t, be, marksDir)
		be.advance(2 * time.Hour)
		_, err := s.SharedGC(failing, time.Hour)
		if !errors.Is(err, errRecords) || !strings.Contains(err.Error(), "nothing was deleted") {
			t.Fatalf("sweep without a live set: %v", err)
		}
		if !os2HasPack(t, be, os2PackOf(t, s, hs[0])) || !slices.Equal(os2Names(t, be, marksDir), marks) {
			t.Fatal("the sweep deleted something without a live set")
		}
		mustRead(t, os2Open(t, be), hs[0], d)
	})

	t.Run("a damaged mark appears meanwhile", func(t *testing.T) {
		be, s := os2New(t, true)
		d := text(9, 3000)
		_, hs := os2Put(t, s, d)
		packs := os2Names(t, be, "packs")
		var bad string
		live := func() ([]tree.Hash, []tree.Hash, error) {
			bad = os2WriteMark(t, be, time.Now(), "not json")
			return nil, nil, nil
		}
		_, err := s.SharedGC(live, 0)
		faulttest.Require(t, err, fault.ErrIntegrity, "gc reading a damaged mark after the records")
		if !strings.Contains(err.Error(), "nothing was condemned") {
			t.Fatalf("gc error: %v", err)
		}
		if got := os2Names(t, be, marksDir); !slices.Equal(got, []string{bad}) {
			t.Fatalf("marks: %v (want only the damaged one)", got)
		}
		if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
			t.Fatalf("packs: %v, want %v", got, packs)
		}
		if !s.Present(hs[0]) {
			t.Fatal("condemned all the same")
		}
	})
}

// A gc that fails or is stopped at any step (the mark written but not swept, the index not read
// again, the mark not writable, a pack or the swept mark not removable, the listing failing)
// never deletes anything live, leaves a store every workspace reads as before, and the next gc
// finishes the work: only the dead pack goes.
func TestOS2InterruptedSharedGCIsFinishedByTheNext(t *testing.T) {
	type setup struct {
		be       *os2Backend
		s        *Store
		deadPack string
		calls    int
	}
	cases := []struct {
		name   string
		arm    func(x *setup)
		live   func(x *setup, root tree.Hash) LiveFunc
		want   string // in the error
		marks  int    // marks left right after the failure
		packOK bool   // the dead pack still has both files right after
	}{
		{name: "stopped once the mark is written", want: errCrash.Error(), marks: 1, packOK: true,
			arm: func(x *setup) { failAt(x.s, "gc.marked") }},
		{name: "the index cannot be read after the mark", want: "gc: ", marks: 1, packOK: true,
			arm: func(x *setup) {
				x.s.Failpoint = func(n string) error {
					if n == "gc.marked" {
						os2FailList(x.be, 2) // condemn's reload passes, the sweep's fails
					}
					return nil
				}
			}},
		{name: "the mark cannot be written", want: "write the gc mark", marks: 0, packOK: true,
			arm: func(x *setup) { x.be.on("Create", func(n string) bool { return strings.HasPrefix(n, marksDir+"/") }) }},
		{name: "the swept mark cannot be removed", want: "remove the swept mark", marks: 1, packOK: false,
			arm: func(x *setup) { x.be.on("Remove", func(n string) bool { return strings.HasPrefix(n, marksDir+"/") }) }},
		{name: "a pack cannot be deleted", want: "the next gc finishes it", marks: 1, packOK: true,
			arm: func(x *setup) { x.be.on("Remove", func(n string) bool { return n == idxName(x.deadPack) }) }},
		{name: "the listing fails after the live set", want: "injected", marks: 0, packOK: true,
			live: func(x *setup, root tree.Hash) LiveFunc {
				return func() ([]tree.Hash, []tree.Hash, error) {
					os2FailList(x.be, 2) // the live set's reload passes, condemn's listing fails
					return []tree.Hash{root}, nil, nil
				}
			}},
		{name: "the listing fails in the sweep", want: "nothing was deleted", marks: 1, packOK: true,
			live: func(x *setup, root tree.Hash) LiveFunc {
				return func() ([]tree.Hash, []tree.Hash, error) {
					if x.calls++; x.calls == 2 { // the sweep of the mark just written
						os2FailList(x.be, 2)
					}
					return []tree.Hash{root}, nil, nil
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be, s := os2New(t, true)
			liveD, deadD := text(10, 3000), text(11, 3000)
			root, live := os2Put(t, s, liveD)
			deadRoot, dead := os2Put(t, s, deadD)
			x := &setup{be: be, s: s, deadPack: os2PackOf(t, s, dead[0])}
			livePack := os2PackOf(t, s, live[0])
			lf := os2Live(root)
			if c.live != nil {
				lf = c.live(x, root)
			}
			if c.arm != nil {
				c.arm(x)
			}
			_, err := s.SharedGC(lf, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the failing gc: %v (want %q)", err, c.want)
			}
			s.Failpoint = nil
			be.setHook(nil)
			if got := os2Names(t, be, marksDir); len(got) != c.marks {
				t.Fatalf("marks right after: %v, want %d", got, c.marks)
			}
			if os2HasPack(t, be, x.deadPack) != c.packOK {
				t.Fatalf("the dead pack's files right after: %v", os2Names(t, be, "packs"))
			}
			if !os2HasPack(t, be, livePack) {
				t.Fatal("the live pack was deleted")
			}
			reader := os2Open(t, be)
			mustRead(t, reader, live[0], liveD)
			if c.packOK {
				mustRead(t, reader, dead[0], deadD) // condemned at most: still read
			}

			res, err := os2Open(t, be).SharedGC(os2Live(root), 0)
			if err != nil {
				t.Fatalf("the next gc: %v", err)
			}
			// Nothing condemned turned out live again: whatever is condemned goes, and a pack
			// the failed gc already deleted is not counted as kept.
			if res.PacksKept != 0 || res.PacksDeleted != btoi(c.packOK) {
				t.Fatalf("the next gc: %+v (want %d pack(s) deleted, none kept)", res, btoi(c.packOK))
			}
			if got, want := os2Names(t, be, "packs"), []string{idxName(livePack)[6:], packName(livePack)[6:]}; !slices.Equal(got, want) {
				t.Fatalf("packs after the next gc: %v, want %v", got, want)
			}
			if got := os2Names(t, be, marksDir); len(got) != 0 {
				t.Fatalf("marks after the next gc: %v", got)
			}
			after := os2Open(t, be)
			mustRead(t, after, live[0], liveD)
			if _, err := after.ReadTree(deadRoot); !errors.Is(err, fault.ErrIntegrity) {
				t.Fatalf("the dead tree after the next gc: %v", err)
			}
		})
	}
}

// A sparse pack (a small live checkpoint next to a big dead file) is rewritten: the live records
// are copied to a fresh pack before the old one is condemned, so a gc stopped right after the
// copy loses nothing and condemns nothing, and one that finds a live record damaged refuses to
// copy it (damage is never given a fresh checksum) and leaves the pack as it is.
func TestOS2SharedGCRewritesASparsePack(t *testing.T) {
	build := func(t *testing.T) (*os2Backend, *Store, tree.Hash, tree.Hash, []byte, tree.Hash) {
		be, s := os2New(t, true)
		b := s.NewBatch()
		defer b.Abort()
		liveD := text(12, 2000)
		live, _ := put(t, b, liveD)
		dead, _ := put(t, b, testkit.Noise(13, 60_000))
		root, _, err := b.PutTree(Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(liveD)), Hash: live}})
		if err != nil {
			t.Fatal(err)
		}
		commit(t, b)
		return be, s, root, live, liveD, dead
	}

	t.Run("collected", func(t *testing.T) {
		be, s, root, live, liveD, dead := build(t)
		old := os2PackOf(t, s, live)
		res, err := s.SharedGC(os2Live(root), 0)
		if err != nil || res.PacksRewritten != 1 || res.PacksCondemned != 1 || res.PacksDeleted != 1 || res.BytesReclaimed <= 50_000 {
			t.Fatalf("gc: %+v, %v", res, err)
		}
		if os2HasPack(t, be, old) {
			t.Fatal("the rewritten pack is still there")
		}
		r := os2Open(t, be)
		mustRead(t, r, live, liveD)
		if _, err := readBlob(r, dead); !errors.Is(err, fault.ErrIntegrity) {
			t.Fatalf("the dead blob: %v", err)
		}
	})

	t.Run("stopped after the copy", func(t *testing.T) {
		be, s, root, live, liveD, dead := build(t)
		old := os2PackOf(t, s, live)
		failAt(s, "gc.rewritten")
		if _, err := s.SharedGC(os2Live(root), 0); !errors.Is(err, errCrash) {
			t.Fatalf("gc stopped after the rewrite: %v", err)
		}
		s.Failpoint = nil
		if got := os2Names(t, be, marksDir); len(got) != 0 {
			t.Fatalf("marks: %v (want none: nothing was condemned)", got)
		}
		if !os2HasPack(t, be, old) || len(os2Names(t, be, "packs")) != 4 {
			t.Fatalf("packs: %v (want the old one and its copy)", os2Names(t, be, "packs"))
		}
		r := os2Open(t, be)
		mustRead(t, r, live, liveD)
		if !r.Present(dead) {
			t.Fatal("the dead blob was condemned by a gc that wrote no mark")
		}
		if _, err := r.SharedGC(os2Live(root), 0); err != nil {
			t.Fatal(err)
		}
		mustRead(t, os2Open(t, be), live, liveD)
		if os2HasPack(t, be, old) {
			t.Fatal("the next gc left the sparse pack")
		}
	})

	t.Run("a live record is damaged", func(t *testing.T) {
		be, s, root, live, _, _ := build(t)
		packs := os2Names(t, be, "packs")
		flipData(t, s, live, 10)
		_, err := s.SharedGC(os2Live(root), 0)
		faulttest.Require(t, err, fault.ErrIntegrity, "gc copying a damaged live record")
		if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
			t.Fatalf("packs: %v, want %v (no copy, nothing deleted)", got, packs)
		}
		if got := os2Names(t, be, marksDir); len(got) != 0 {
			t.Fatalf("marks: %v", got)
		}
	})
}

// os2DeltaStore holds, in format version 2 (an idx that does not name delta bases, so gc reads
// them from the records): pack p0 a tree stored whole, p1 a dead delta of it, and pLive a live
// checkpoint next to a dead delta of p1's. Only the records of the deltas tell that p0 and p1
// must stay.
type os2DeltaStore struct {
	be               *os2Backend
	s                *Store
	h0, h1, h2, root tree.Hash
	t2               Tree
	live             tree.Hash
	liveD            []byte
	p0, p1, pLive    string
	packsAtTheOpen   []string
}

func os2NewDeltaStore(t *testing.T, shared bool) *os2DeltaStore {
	t.Helper()
	be, s := os2New(t, shared)
	r := randFor(21)
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	x := &os2DeltaStore{be: be, t2: editOne(r, t1), liveD: text(22, 3000)}
	b := s.NewBatch()
	x.h0, _ = putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	x.h1, _ = putDelta(t, b, t1, x.h0)
	commit(t, b)
	b = s.NewBatch()
	x.h2, _ = putDelta(t, b, x.t2, x.h1)
	x.live, _ = put(t, b, x.liveD)
	var err error
	x.root, _, err = b.PutTree(Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(x.liveD)), Hash: x.live}})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if !isDelta(s, x.h1) || !isDelta(s, x.h2) {
		t.Fatal("setup: not deltas")
	}
	x.p0, x.p1, x.pLive = os2PackOf(t, s, x.h0), os2PackOf(t, s, x.h1), os2PackOf(t, s, x.live)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	toVersion(t, be.Root(), 2)
	x.s = os2Open(t, be)
	x.packsAtTheOpen = os2Names(t, be, "packs")
	return x
}

// A gc that cannot read the base of a delta it keeps (an I/O error, not damage) stops before it
// condemns or deletes anything: deleting around it could delete that base. Once the error is
// gone, the base of the dead delta in a pack that stays is kept even though a mark condemns it.
func TestOS2SharedGCStopsWhenADeltaBaseCannotBeRead(t *testing.T) {
	for _, phase := range []string{"mark", "sweep"} {
		t.Run(phase, func(t *testing.T) {
			x := os2NewDeltaStore(t, true)
			if phase == "sweep" {
				at := time.Now().Add(-2 * time.Hour)
				os2WriteMark(t, x.be, at, os2MarkJSON(t, at, x.p0))
				x.packsAtTheOpen = os2Names(t, x.be, "packs")
			}
			marks := os2Names(t, x.be, marksDir)
			x.be.on("Open", func(n string) bool { return n == packName(x.p1) })
			// The packs are young: the mark phase keeps them, and the records of those it keeps
			// tell which bases stay; the sweep keeps every pack the mark does not name.
			_, err := x.s.SharedGC(os2Live(x.root), time.Hour)
			if !errors.Is(err, errOS2IO) || errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "nothing was deleted") {
				t.Fatalf("gc: %v (want the I/O error, and that nothing was deleted)", err)
			}
			if got := os2Names(t, x.be, "packs"); !slices.Equal(got, x.packsAtTheOpen) {
				t.Fatalf("packs: %v, want %v", got, x.packsAtTheOpen)
			}
			if got := os2Names(t, x.be, marksDir); !slices.Equal(got, marks) {
				t.Fatalf("marks: %v, want %v", got, marks)
			}
			x.be.setHook(nil)
			res, err := x.s.SharedGC(os2Live(x.root), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if phase == "sweep" && (res.PacksKept != 1 || res.PacksDeleted != 0) {
				t.Fatalf("sweep: %+v (want the base of the dead delta kept)", res)
			}
			r := os2Open(t, x.be)
			mustReadTree(t, r, x.h2, x.t2)
			mustRead(t, r, x.live, x.liveD)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
