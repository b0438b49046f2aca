// Package storetest holds the behaviour every shared object store must have, as a test suite run
// against each backend: the local file:// directory (package objectstore's tests) and S3 through a
// real MinIO (package bucket's tests). A backend passes when two workspaces can write to one store
// at once while a third collects it, and nothing referenced is ever lost.
package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// Factory returns a fresh, empty shared backend for one test, removed when the test ends.
type Factory func(t *testing.T) objectstore.Backend

// Clock wraps a backend so a test can move its clock forward: the grace period of a gc is
// measured on Now against the times files were written.
type Clock struct {
	objectstore.Backend
	mu    sync.Mutex
	shift time.Duration
}

// Now implements objectstore.Backend.
func (c *Clock) Now() (time.Time, error) {
	t, err := c.Backend.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return t.Add(c.shift), err
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.shift += d
	c.mu.Unlock()
}

// workspace is one writer of the shared store: its own Store (index, work directory) and the
// roots its "records" reference.
type workspace struct {
	t     *testing.T
	s     *objectstore.Store
	mu    sync.Mutex
	roots map[tree.Hash]bool
}

func open(t *testing.T, be objectstore.Backend) *workspace {
	t.Helper()
	s, err := objectstore.OpenBackend(be, t.TempDir())
	if err != nil {
		t.Fatalf("open the shared store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !s.Shared() {
		t.Fatal("the backend is not shared")
	}
	return &workspace{t: t, s: s, roots: map[tree.Hash]bool{}}
}

// live is the gc's live set: everything reachable from the roots of every workspace given.
func live(_ *objectstore.Store, ws ...*workspace) objectstore.LiveFunc {
	return func() ([]tree.Hash, []tree.Hash, error) {
		var roots []tree.Hash
		for _, w := range ws {
			w.mu.Lock()
			for h := range w.roots {
				roots = append(roots, h)
			}
			w.mu.Unlock()
		}
		// Every root here stands for a record that may still be pending (published, not yet
		// confirmed), so missing objects under one are skipped, as for pending records.
		return nil, roots, nil
	}
}

// content is a file's bytes, deterministic per seed, compressible like source text.
func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7)) // #nosec G404 -- deterministic test content, not a secret
	words := []string{"func ", "return ", "if err != nil ", "{\n", "}\n", "x", "y := ", "// note\n"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.Bytes()[:n]
}

// checkpoint stores files as one directory tree in one batch, confirms the objects as a record
// would, and returns the tree's hash (not yet a root: the caller publishes it).
func (w *workspace) checkpoint(files map[string][]byte) (tree.Hash, error) {
	return w.checkpointFrom(files, nil)
}

// checkpointFrom is checkpoint for new versions of files: each is stored as a delta of the same
// name's content in prev (a hash per name; none is a whole copy), as a workspace stores a
// modified file.
func (w *workspace) checkpointFrom(files map[string][]byte, prev map[string]tree.Hash) (tree.Hash, error) {
	b := w.s.NewBatch()
	defer b.Abort()
	var t objectstore.Tree
	for _, name := range sortedKeys(files) {
		data := files[name]
		h := tree.Hash(sha256.Sum256(data))
		if _, err := b.PutBlobDelta(bytes.NewReader(data), h, int64(len(data)), prev[name]); err != nil {
			return tree.ZeroHash, err
		}
		t = append(t, objectstore.TreeEntry{Name: name, Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data)), Hash: h})
	}
	root, _, err := b.PutTree(t)
	if err != nil {
		return tree.ZeroHash, err
	}
	if err := b.Commit(); err != nil {
		return tree.ZeroHash, err
	}
	return root, nil
}

// edited returns files with each one's middle changed, and the hashes of the originals.
func edited(files map[string][]byte) (map[string][]byte, map[string]tree.Hash) {
	next, prev := map[string][]byte{}, map[string]tree.Hash{}
	for name, data := range files {
		prev[name] = tree.Hash(sha256.Sum256(data))
		c := bytes.Clone(data)
		copy(c[len(c)/2:], "// edited\n")
		next[name] = c
	}
	return next, prev
}

// publish makes root a root of w (its record is visible), then confirms, as a transaction does.
func (w *workspace) publish(root tree.Hash) error {
	w.mu.Lock()
	w.roots[root] = true
	w.mu.Unlock()
	if err := w.s.Confirm(); err != nil {
		w.mu.Lock()
		delete(w.roots, root)
		w.mu.Unlock()
		return err
	}
	return nil
}

func (w *workspace) drop(root tree.Hash) {
	w.mu.Lock()
	delete(w.roots, root)
	w.mu.Unlock()
}

// restores checks that every file of root reads back exactly as files says.
func (w *workspace) restores(root tree.Hash, files map[string][]byte) error {
	t, err := w.s.ReadTree(root)
	if err != nil {
		return err
	}
	if len(t) != len(files) {
		return fmt.Errorf("tree %s has %d entries, want %d", root, len(t), len(files))
	}
	for _, e := range t {
		rc, err := w.s.OpenBlob(e.Hash)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		got, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		if !bytes.Equal(got, files[e.Name]) {
			return fmt.Errorf("%s: content differs", e.Name)
		}
	}
	return nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func files(seed uint64, n, size int) map[string][]byte {
	out := map[string][]byte{}
	for i := range n {
		out[fmt.Sprintf("f%03d", i)] = content(seed*1000+uint64(i), size)
	}
	return out
}

// Run runs the whole suite against backends newBackend makes.
func Run(t *testing.T, newBackend Factory) {
	t.Run("collects only the dead", func(t *testing.T) { collectsOnlyTheDead(t, newBackend) })
	t.Run("grace keeps condemned packs, writers store afresh", func(t *testing.T) { graceAndFreshCopies(t, newBackend) })
	t.Run("a writer that relied on a condemned pack rescues its objects", func(t *testing.T) { rescue(t, newBackend) })
	t.Run("a writer whose objects were swept fails and changes nothing", func(t *testing.T) { sweptUnderWriter(t, newBackend) })
	t.Run("a sweep keeps a condemned pack a published record needs", func(t *testing.T) { sweepKeepsLive(t, newBackend) })
	t.Run("orphaned uploads are collected once old", func(t *testing.T) { orphans(t, newBackend) })
	t.Run("an interrupted sweep is finished by the next gc", func(t *testing.T) { interruptedSweep(t, newBackend) })
	t.Run("records are kept per workspace", func(t *testing.T) { records(t, newBackend) })
	t.Run("concurrent writers and gc lose nothing", func(t *testing.T) { concurrent(t, newBackend) })
	t.Run("delta bases are kept, and rescued from condemned packs", func(t *testing.T) { deltaBases(t, newBackend) })
}

// deltaBases: a file stored as a delta keeps its base alive through gc even when no record names
// the base any more; and a writer whose delta relies on a base in a pack a gc condemned (its
// index did not know yet) copies the base when it confirms, so a sweep that never hears of the
// writer's record still leaves every delta readable.
func deltaBases(t *testing.T, newBackend Factory) {
	clock := &Clock{Backend: newBackend(t)}
	a, b := open(t, clock), open(t, clock)
	v1 := files(9, 12, 4000)
	r1, err := a.checkpoint(v1)
	if err != nil {
		t.Fatal(err)
	}
	v2, prev := edited(v1)
	r2, err := a.checkpointFrom(v2, prev)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range v2 {
		if info, ok := a.s.Info(tree.Hash(sha256.Sum256(data))); !ok || !info.Delta || info.Kind != objectstore.BlobObject {
			t.Fatalf("%s: %+v (want a blob stored as a delta)", name, info)
		}
	}
	if err := a.publish(r2); err != nil {
		t.Fatal(err)
	}
	// v1 is named by no root: only the deltas of v2 need its blobs.
	clock.Advance(2 * time.Hour)
	if _, err := a.s.SharedGC(live(a.s, a), 0); err != nil {
		t.Fatal(err)
	}
	c := open(t, clock)
	if err := c.restores(r2, v2); err != nil {
		t.Fatalf("deltas after a gc that no record of their bases survived: %v", err)
	}

	// b stores v3 against v2's blobs while a gc condemns the pack holding them: b's index is
	// stale, so it builds its deltas on them, and Confirm must copy them.
	if err := b.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	a.drop(r2)
	clock.Advance(2 * time.Hour)
	if res, err := a.s.SharedGC(live(a.s, a), time.Hour); err != nil || res.PacksCondemned == 0 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	v3, prev3 := edited(v2)
	for name := range v3 {
		v3[name] = append(v3[name], "// v3\n"...)
	}
	r3, err := b.checkpointFrom(v3, prev3)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.publish(r3); err != nil {
		t.Fatalf("confirm: %v (want the condemned bases copied)", err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := a.s.SharedGC(live(a.s, a), time.Hour); err != nil { // a does not know b's record
		t.Fatal(err)
	}
	d := open(t, clock)
	if err := d.restores(r3, v3); err != nil {
		t.Fatalf("b's deltas after the sweep: %v", err)
	}
	if _, err := d.s.ReadTree(r1); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("v1's tree, named by no record, is still there: %v", err)
	}
}

func collectsOnlyTheDead(t *testing.T, newBackend Factory) {
	be := newBackend(t)
	a := open(t, be)
	keptFiles, goneFiles := files(1, 20, 3000), files(2, 20, 3000)
	kept, err := a.checkpoint(keptFiles)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := a.checkpoint(goneFiles)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.publish(kept); err != nil {
		t.Fatal(err)
	}
	res, err := a.s.SharedGC(live(a.s, a), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksCondemned != 1 || res.PacksDeleted != 1 || res.MarksSwept != 1 || res.MarksPending != 0 {
		t.Fatalf("gc with no grace: %+v (want the dead pack condemned and swept at once)", res)
	}
	if err := a.restores(kept, keptFiles); err != nil {
		t.Fatalf("the live checkpoint after gc: %v", err)
	}
	if _, err := a.s.ReadTree(gone); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("the dead tree is still readable: %v", err)
	}
	// A second store instance (another workspace) sees the same: nothing dangling.
	b := open(t, be)
	if err := b.restores(kept, keptFiles); err != nil {
		t.Fatalf("another workspace reading the live checkpoint: %v", err)
	}
	if res, err := a.s.SharedGC(live(a.s, a), 0); err != nil || res.PacksDeleted+res.PacksCondemned != 0 {
		t.Fatalf("a second gc: %+v, %v (want nothing to do)", res, err)
	}
}

func graceAndFreshCopies(t *testing.T, newBackend Factory) {
	clock := &Clock{Backend: newBackend(t)}
	a, b := open(t, clock), open(t, clock)
	data := files(3, 10, 2000)
	dead, err := a.checkpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	res, err := a.s.SharedGC(live(a.s, a), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksCondemned != 1 || res.PacksDeleted != 0 || res.MarksPending != 1 {
		t.Fatalf("first gc: %+v (want one pack condemned, nothing deleted)", res)
	}
	// Workspace b stores the same files: the condemned copies are not deduplicated onto.
	if err := b.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	root, err := b.checkpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if root != dead {
		t.Fatal("the same files made a different tree")
	}
	if err := b.publish(root); err != nil {
		t.Fatal(err)
	}
	// Within the grace period nothing goes; past it, the condemned pack does, and b's fresh copy
	// is what every workspace reads.
	if res, err := a.s.SharedGC(live(a.s, a, b), time.Hour); err != nil || res.PacksDeleted != 0 {
		t.Fatalf("gc within the grace period: %+v, %v", res, err)
	}
	clock.Advance(2 * time.Hour)
	res, err = a.s.SharedGC(live(a.s, a, b), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 1 || res.MarksSwept != 1 {
		t.Fatalf("gc past the grace period: %+v (want the condemned pack swept)", res)
	}
	for _, w := range []*workspace{a, b, open(t, clock)} {
		if err := w.s.Refresh(); err != nil {
			t.Fatal(err)
		}
		if err := w.restores(root, data); err != nil {
			t.Fatalf("after the sweep: %v", err)
		}
	}
}

func rescue(t *testing.T, newBackend Factory) {
	clock := &Clock{Backend: newBackend(t)}
	a, b := open(t, clock), open(t, clock)
	data := files(4, 10, 2000)
	first, err := a.checkpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	// b loads its index while the pack is fine, then a gc (which does not know of b's coming
	// record) condemns it.
	if err := b.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if res, err := a.s.SharedGC(live(a.s, a), time.Hour); err != nil || res.PacksCondemned != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	root, err := b.checkpoint(data) // deduplicates onto the condemned pack: b's index is stale
	if err != nil {
		t.Fatal(err)
	}
	if root != first {
		t.Fatal("different tree")
	}
	if err := b.publish(root); err != nil {
		t.Fatalf("confirm: %v (want the condemned objects copied)", err)
	}
	clock.Advance(2 * time.Hour)
	res, err := a.s.SharedGC(live(a.s, a), time.Hour) // a does not even know b's record
	if err != nil || res.PacksDeleted != 1 {
		t.Fatalf("sweep: %+v, %v", res, err)
	}
	c := open(t, clock)
	if err := c.restores(root, data); err != nil {
		t.Fatalf("b's checkpoint after the sweep: %v", err)
	}
}

func sweptUnderWriter(t *testing.T, newBackend Factory) {
	be := newBackend(t)
	a, b := open(t, be), open(t, be)
	data := files(5, 8, 1500)
	if _, err := a.checkpoint(data); err != nil {
		t.Fatal(err)
	}
	if err := b.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	root, err := b.checkpoint(data) // all deduplicated onto a's pack
	if err != nil {
		t.Fatal(err)
	}
	// Before b's record is visible, a gc with no grace condemns and sweeps a's pack.
	if res, err := a.s.SharedGC(live(a.s, a), 0); err != nil || res.PacksDeleted != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	err = b.publish(root)
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("confirm after the objects were swept: %v (want a conflict, so the record is not committed)", err)
	}
	// Running the change again stores fresh copies.
	if err := b.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	root, err = b.checkpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.publish(root); err != nil {
		t.Fatal(err)
	}
	if err := open(t, be).restores(root, data); err != nil {
		t.Fatal(err)
	}
}

func sweepKeepsLive(t *testing.T, newBackend Factory) {
	clock := &Clock{Backend: newBackend(t)}
	a, b := open(t, clock), open(t, clock)
	data := files(6, 8, 1500)
	root, err := a.checkpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if res, err := a.s.SharedGC(live(a.s, a), time.Hour); err != nil || res.PacksCondemned != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	// a publishes its record only now (a slow transaction whose record the mark missed): its
	// Confirm rescues, but even the condemned pack must survive a sweep that sees the record.
	a.mu.Lock()
	a.roots[root] = true
	a.mu.Unlock()
	clock.Advance(2 * time.Hour)
	res, err := b.s.SharedGC(live(b.s, a, b), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 0 || res.PacksKept != 1 || res.MarksSwept != 1 {
		t.Fatalf("sweep with the record visible: %+v (want the pack kept)", res)
	}
	if err := open(t, clock).restores(root, data); err != nil {
		t.Fatal(err)
	}
}

func orphans(t *testing.T, newBackend Factory) {
	clock := &Clock{Backend: newBackend(t)}
	a := open(t, clock)
	// An upload cut short after its pack: a pack without its idx.
	a.s.Failpoint = func(name string) error {
		if name == "store.pack-installed" {
			return errors.New("killed between the pack and its idx")
		}
		return nil
	}
	if _, err := a.checkpoint(files(7, 5, 1000)); err == nil {
		t.Fatal("the cut-short commit succeeded")
	}
	a.s.Failpoint = nil
	b := open(t, clock)
	if got := b.s.Stats().Packs; got != 0 {
		t.Fatalf("another workspace indexes the orphan: %d packs", got)
	}
	if res, err := b.s.SharedGC(live(b.s, b), time.Hour); err != nil || res.PacksCondemned != 0 {
		t.Fatalf("gc while the orphan is young: %+v, %v", res, err)
	}
	clock.Advance(2 * time.Hour)
	if res, err := b.s.SharedGC(live(b.s, b), time.Hour); err != nil || res.PacksCondemned != 1 {
		t.Fatalf("gc once the orphan is old: %+v, %v", res, err)
	}
	clock.Advance(2 * time.Hour)
	if res, err := b.s.SharedGC(live(b.s, b), time.Hour); err != nil || res.PacksDeleted != 1 {
		t.Fatalf("sweep of the orphan: %+v, %v", res, err)
	}
	if files, err := clock.List("packs"); err != nil || len(files) != 0 {
		t.Fatalf("packs left: %v, %v", files, err)
	}
}

func interruptedSweep(t *testing.T, newBackend Factory) {
	be := newBackend(t)
	a := open(t, be)
	for i := range 3 {
		if _, err := a.checkpoint(files(uint64(10+i), 4, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	keepFiles := files(20, 4, 1000)
	keep, err := a.checkpoint(keepFiles)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.publish(keep); err != nil {
		t.Fatal(err)
	}
	a.s.Failpoint = func(name string) error {
		if name == "gc.deleted-one" {
			return errors.New("killed after the first deletion")
		}
		return nil
	}
	if _, err := a.s.SharedGC(live(a.s, a), 0); err == nil {
		t.Fatal("the interrupted gc succeeded")
	}
	a.s.Failpoint = nil
	// Whoever reads meanwhile sees a consistent store: the live checkpoint restores.
	if err := open(t, be).restores(keep, keepFiles); err != nil {
		t.Fatal(err)
	}
	res, err := open(t, be).s.SharedGC(live(a.s, a), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.MarksSwept != 1 || res.PacksDeleted != 2 {
		t.Fatalf("the next gc: %+v (want the mark finished: the two packs left deleted)", res)
	}
	if err := open(t, be).restores(keep, keepFiles); err != nil {
		t.Fatal(err)
	}
}

func records(t *testing.T, newBackend Factory) {
	be := newBackend(t)
	ra := objectstore.NewRecords(be, objectstore.WorkspaceRecords("aaaa"))
	rb := objectstore.NewRecords(be, objectstore.WorkspaceRecords("bbbb"))
	na, err := ra.Prepare(1, []byte("a's first"))
	if err != nil {
		t.Fatal(err)
	}
	nb, err := rb.Prepare(1, []byte("b's first"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ra.Pending(); err != nil || len(p) != 1 || p[0] != na {
		t.Fatalf("a's pending: %v, %v", p, err)
	}
	if err := ra.Commit(na); err != nil {
		t.Fatal(err)
	}
	if err := ra.Commit(na); err != nil {
		t.Fatalf("a second commit of the same record: %v", err)
	}
	if c, err := ra.Committed(); err != nil || len(c) != 1 || c[0] != na {
		t.Fatalf("a's committed: %v, %v", c, err)
	}
	if c, err := rb.Committed(); err != nil || len(c) != 0 {
		t.Fatalf("b sees a's records: %v, %v", c, err)
	}
	if p, err := ra.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("a's pending after commit: %v, %v", p, err)
	}
	if got, err := ra.Read(na); err != nil || string(got) != "a's first" {
		t.Fatalf("read: %q, %v", got, err)
	}
	if err := rb.Discard(nb); err != nil {
		t.Fatal(err)
	}
	if p, err := rb.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("b's pending after discard: %v, %v", p, err)
	}
	// A confirmation that fails discards the prepared record: its transaction must not commit.
	rb.Confirm = func() error { return fault.Conflict("collected meanwhile") }
	if _, err := rb.Prepare(2, []byte("b's second")); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("prepare with a failing confirmation: %v", err)
	}
	if p, err := rb.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("the refused record stayed pending: %v, %v", p, err)
	}
	ws, err := be.List("records")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, w := range ws {
		if w.Dir {
			dirs = append(dirs, w.Name)
		}
	}
	if len(dirs) < 1 || !contains(dirs, "aaaa") {
		t.Fatalf("workspaces listed under records/: %v", dirs)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// concurrent runs two writers (each checkpointing, publishing and dropping old roots) against a
// collector sweeping with a short grace, and then checks every root still published restores.
func concurrent(t *testing.T, newBackend Factory) {
	be := newBackend(t)
	a, b, c := open(t, be), open(t, be), open(t, be)
	type published struct {
		w     *workspace
		root  tree.Hash
		files map[string][]byte
	}
	var mu sync.Mutex
	var all []published
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	writer := func(w *workspace, seed uint64) {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 1)) // #nosec G404 -- a reproducible workload, not a secret
		var mine []published
		for i := range 12 {
			fs := files(seed*100+r.Uint64N(6), 6, 800+r.IntN(800)) // overlapping content
			if err := w.s.Refresh(); err != nil {
				errs <- err
				return
			}
			root, err := w.checkpoint(fs)
			if err != nil {
				errs <- fmt.Errorf("checkpoint %d: %w", i, err)
				return
			}
			if err := w.publish(root); err != nil {
				if errors.Is(err, fault.ErrConflict) {
					continue // swept under it: the change is refused, never half kept
				}
				errs <- fmt.Errorf("publish %d: %w", i, err)
				return
			}
			mine = append(mine, published{w, root, fs})
			if len(mine) > 4 && r.IntN(2) == 0 { // a prune
				w.drop(mine[0].root)
				mine = mine[1:]
			}
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
	}
	wg.Add(2)
	go writer(a, 1)
	go writer(b, 2)
	gcDone := make(chan struct{})
	var collected objectstore.SharedGCResult
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := c.s.SharedGC(live(c.s, a, b), 0)
			if err != nil {
				errs <- fmt.Errorf("gc: %w", err)
				return
			}
			collected.PacksDeleted += res.PacksDeleted
			collected.MarksSwept += res.MarksSwept
		}
	}()
	wg.Wait()
	close(stop)
	<-gcDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := c.s.SharedGC(live(c.s, a, b), 0); err != nil {
		t.Fatal(err)
	}
	reader := open(t, be)
	for _, p := range all {
		if err := reader.restores(p.root, p.files); err != nil {
			t.Errorf("published root %s: %v", p.root, err)
		}
	}
	if len(all) == 0 {
		t.Fatal("no checkpoint was published")
	}
	if collected.PacksDeleted == 0 {
		t.Errorf("the collector deleted nothing while the writers ran: %+v", collected)
	}
	t.Logf("%d roots published and restored; the concurrent gc swept %d marks, deleting %d packs",
		len(all), collected.MarksSwept, collected.PacksDeleted)
}
