package objectstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// os1TailReader yields data, then fails with err instead of io.EOF.
type os1TailReader struct {
	data []byte
	err  error
}

func (r *os1TailReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// os1AtEOF passes r through and calls at once, when r first reports io.EOF.
type os1AtEOF struct {
	r    io.Reader
	at   func()
	done bool
}

func (r *os1AtEOF) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if errors.Is(err, io.EOF) && !r.done {
		r.done = true
		r.at()
	}
	return n, err
}

// os1BlockIdx puts a directory where the idx of the pack being written (id) will go, so that
// writing it fails as a full or broken disk would, late in the pack's life.
func os1BlockIdx(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(s.tmpDir, id+".idx"), 0o700); err != nil {
		t.Fatal(err)
	}
}

// os1Temp is the one pack id this process is writing.
func os1Temp(t *testing.T, s *Store) string {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.temps) != 1 {
		t.Fatalf("%d packs being written, want 1", len(s.temps))
	}
	for id := range s.temps {
		return id
	}
	return ""
}

func os1PackFiles(t *testing.T, s *Store) []string {
	t.Helper()
	return files(t, s.packsDir)
}

// A file whose read fails after its last byte (an I/O error where EOF should be) fails the put
// with that error: it is not a changed file (which the caller would re-hash and retry forever),
// and nothing is stored.
func TestPutBlobReadErrorAfterTheLastByte(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	data := text(311, 2000)
	h := tree.Sum(data)
	eio := errors.New("input/output error")
	_, err := b.PutBlob(&os1TailReader{data: data, err: eio}, h, int64(len(data)))
	if !errors.Is(err, eio) || errors.Is(err, ErrContentChanged) {
		t.Fatalf("PutBlob = %v, want the read error, not a changed file", err)
	}
	commit(t, b)
	if s.Has(h) || len(os1PackFiles(t, s)) != 0 {
		t.Fatalf("a failed put stored something: %v", os1PackFiles(t, s))
	}
}

// A pack that cannot be finished when it fills up (its idx cannot be written) fails the put that
// filled it and every later one; Commit refuses, nothing becomes visible, Abort leaves nothing.
func TestRolloverFailurePoisonsTheBatch(t *testing.T) {
	s := TestStore(t)
	b0 := s.NewBatch()
	keptData := text(312, 3000)
	kept, _ := put(t, b0, keptData)
	commit(t, b0)

	b := s.NewBatch()
	a, _ := put(t, b, text(313, 3000))
	os1BlockIdx(t, s, os1Temp(t, s))
	old := packTarget
	packTarget = 1 // the next record fills the pack
	defer func() { packTarget = old }()
	second := text(314, 3000)
	h2 := tree.Sum(second)
	if _, err := b.PutBlob(bytes.NewReader(second), h2, int64(len(second))); err == nil || !strings.Contains(err.Error(), "write idx") {
		t.Fatalf("put that filled the pack: %v, want the idx failure", err)
	}
	third := text(315, 3000)
	if _, err := b.PutBlob(bytes.NewReader(third), tree.Sum(third), int64(len(third))); err == nil || !strings.Contains(err.Error(), "failed earlier") {
		t.Fatalf("put after the failure: %v", err)
	}
	if err := b.Commit(); err == nil {
		t.Fatal("Commit of a failed batch succeeded")
	}
	b.Abort()
	for _, h := range []tree.Hash{a, h2, tree.Sum(third)} {
		if s.Has(h) {
			t.Fatalf("object %s of a failed batch is visible", h)
		}
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("Abort left %v in tmp/", got)
	}
	if got := os1PackFiles(t, s); len(got) != 2 {
		t.Fatalf("packs/ = %v, want only the earlier pack and its idx", got)
	}
	mustRead(t, s, kept, keptData)
}

// A large blob whose pack cannot be finished (its idx cannot be written) fails its put, not as
// changed content, and leaves nothing behind; the batch goes on with its other objects.
func TestLargeBlobPackThatCannotBeFinished(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	big := testkit.Noise(316, largeBlob+1)
	h := tree.Sum(big)
	r := &os1AtEOF{r: bytes.NewReader(big), at: func() { os1BlockIdx(t, s, os1Temp(t, s)) }}
	_, err := b.PutBlob(r, h, int64(len(big)))
	if err == nil || !strings.Contains(err.Error(), "write idx") || errors.Is(err, ErrContentChanged) {
		t.Fatalf("PutBlob = %v, want the idx failure", err)
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("a failed large put left %v in tmp/", got)
	}
	small := text(317, 1000)
	hs, _ := put(t, b, small)
	commit(t, b)
	if s.Has(h) {
		t.Fatal("the failed large blob is visible")
	}
	mustRead(t, s, hs, small)
}

// A large blob put into a batch already committed is refused once streamed, and its pack is
// removed: it is never left in tmp/ as if stored, nor installed outside any commit.
func TestLargeBlobIntoACommittedBatch(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	small := text(318, 1000)
	hs, _ := put(t, b, small)
	commit(t, b)
	big := testkit.Noise(319, largeBlob+1)
	h := tree.Sum(big)
	if _, err := b.PutBlob(bytes.NewReader(big), h, int64(len(big))); err == nil || !strings.Contains(err.Error(), "already committed") {
		t.Fatalf("PutBlob into a committed batch: %v", err)
	}
	if s.Has(h) {
		t.Fatal("a blob put after Commit is visible")
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("the refused blob left %v in tmp/", got)
	}
	if got := os1PackFiles(t, s); len(got) != 2 {
		t.Fatalf("packs/ = %v, want only the committed pack and its idx", got)
	}
	mustRead(t, s, hs, small)
}

// os1Gate holds its first Read until released, after saying it started.
type os1Gate struct {
	r                 io.Reader
	started, released chan struct{}
	once              bool
}

func (g *os1Gate) Read(p []byte) (int, error) {
	if !g.once {
		g.once = true
		close(g.started)
		<-g.released
	}
	return g.r.Read(p)
}

// Two workers storing the same large file at once (two paths with one content) store it once:
// the second to finish reports nothing stored and its pack is dropped, so the content costs one
// pack, not two, and the stored size is not counted twice.
func TestConcurrentLargeDuplicateStoredOnce(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	big := testkit.Noise(320, largeBlob+1)
	h := tree.Sum(big)
	gate := &os1Gate{r: bytes.NewReader(big), started: make(chan struct{}), released: make(chan struct{})}
	type result struct {
		n   int64
		err error
	}
	res := make(chan result, 1)
	go func() {
		n, err := b.PutBlob(gate, h, int64(len(big)))
		res <- result{n, err}
	}()
	<-gate.started // the first worker is past the dedup check and streaming
	n, err := b.PutBlob(bytes.NewReader(big), h, int64(len(big)))
	if err != nil || n == 0 {
		t.Fatalf("second worker: %d, %v", n, err)
	}
	close(gate.released)
	first := <-res
	if first.err != nil || first.n != 0 {
		t.Fatalf("first worker, finishing last: stored %d, %v; want 0 (a duplicate)", first.n, first.err)
	}
	commit(t, b)
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("tmp/ after commit: %v", got)
	}
	if got := os1PackFiles(t, s); len(got) != 2 {
		t.Fatalf("packs/ = %v, want one pack and its idx", got)
	}
	mustRead(t, s, h, big)
}

// In a shared store a large blob the batch stored is something the transaction relies on: if a
// gc of another workspace sweeps it before the record commits, Confirm fails the transaction
// rather than let it reference a blob that is gone.
func TestSharedLargeBlobIsRelied(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBackend(NewDir(dir, true), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	big := testkit.Noise(321, largeBlob+1)
	h := tree.Sum(big)
	if _, err := b.PutBlob(bytes.NewReader(big), h, int64(len(big))); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	id := s.index.at(h).pack.id
	for _, name := range []string{idxName(id), packName(id)} {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Confirm(); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Confirm after the large blob was swept: %v, want a conflict", err)
	}
}

// A commit whose idx cannot be written fails, makes nothing visible, and refuses to be retried on
// the same batch; Abort cleans tmp/ and a fresh batch stores the same content.
func TestCommitFailsWhenTheIdxCannotBeWritten(t *testing.T) {
	s := TestStore(t)
	b0 := s.NewBatch()
	keptData := text(322, 3000)
	kept, _ := put(t, b0, keptData)
	commit(t, b0)

	b := s.NewBatch()
	data := text(323, 3000)
	h, _ := put(t, b, data)
	os1BlockIdx(t, s, os1Temp(t, s))
	if err := b.Commit(); err == nil || !strings.Contains(err.Error(), "write idx") {
		t.Fatalf("Commit = %v, want the idx failure", err)
	}
	if s.Has(h) {
		t.Fatal("an object of a failed commit is visible")
	}
	if err := b.Commit(); err == nil || !strings.Contains(err.Error(), "failed earlier") {
		t.Fatalf("second Commit = %v", err)
	}
	b.Abort()
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("Abort left %v in tmp/", got)
	}
	if got := os1PackFiles(t, s); len(got) != 2 {
		t.Fatalf("packs/ = %v, want only the earlier pack and its idx", got)
	}
	b = s.NewBatch()
	if _, n := put(t, b, data); n == 0 {
		t.Fatal("the retry stored nothing")
	}
	commit(t, b)
	mustRead(t, s, h, data)
	mustRead(t, s, kept, keptData)
}

// When packs/ cannot be made durable after the packs are installed, Commit fails and this process
// does not use the objects (a checkpoint must not reference what a crash could lose); the packs
// themselves are complete, and a later open finds them whole.
func TestCommitFailsWhenPacksCannotBeSynced(t *testing.T) {
	dir := t.TempDir()
	fb := newOS1Faults(dir, false)
	s, err := OpenBackend(fb, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	data := text(324, 3000)
	h, _ := put(t, b, data)
	fb.set(os1FailOn("sync", "packs", errOS1Injected))
	err = b.Commit()
	if !errors.Is(err, errOS1Injected) || !strings.Contains(err.Error(), "commit objects") {
		t.Fatalf("Commit = %v, want the sync failure", err)
	}
	if s.Has(h) {
		t.Fatal("an object whose commit failed is used")
	}
	if err := b.Commit(); err == nil {
		t.Fatal("a failed commit succeeded on retry without syncing")
	}
	b.Abort()
	fb.set(nil)
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	mustRead(t, s2, h, data)
	if err := s2.CheckObject(h, true); err != nil {
		t.Fatal(err)
	}
}
