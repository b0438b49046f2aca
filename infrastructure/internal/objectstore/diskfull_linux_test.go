package objectstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/planhq/plan/tests/testkit"

	"github.com/planhq/plan/domain/tree"
)

// os1FileSizeLimit runs fn with the process's file size limit (RLIMIT_FSIZE) at limit bytes: a
// write past it fails with EFBIG, as a full disk or a quota fails it. Go ignores SIGXFSZ, and no
// test of this package runs in parallel, so only fn's writes meet the limit.
func os1FileSizeLimit(t *testing.T, limit uint64, fn func()) {
	t.Helper()
	testkit.SkipUnderTestLog(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if old.Max < limit {
		t.Skipf("file size limit %d is below %d", old.Max, limit)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatalf("restore the file size limit: %v", err)
		}
	}()
	fn()
}

// A disk that fills while a batch's pack is flushed at Commit fails the commit with the write
// error; nothing becomes visible, what was committed before is intact, and once there is room
// again a fresh batch stores the same content.
func TestDiskFullAtCommit(t *testing.T) {
	s := TestStore(t)
	b0 := s.NewBatch()
	keptData := text(331, 3000)
	kept, _ := put(t, b0, keptData)
	commit(t, b0)

	b := s.NewBatch()
	var blobs [][]byte
	var hs []tree.Hash
	for i := range 3 {
		d := testkit.Noise(uint64(332+i), 100<<10)
		h, _ := put(t, b, d) // held in the pack's write buffer
		blobs, hs = append(blobs, d), append(hs, h)
	}
	var err error
	os1FileSizeLimit(t, 64<<10, func() { err = b.Commit() })
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Commit on a full disk = %v, want EFBIG", err)
	}
	for _, h := range hs {
		if s.Has(h) {
			t.Fatalf("object %s of a failed commit is visible", h)
		}
	}
	b.Abort()
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("Abort left %v in tmp/", got)
	}
	mustRead(t, s, kept, keptData)
	b = s.NewBatch()
	for _, d := range blobs {
		put(t, b, d)
	}
	commit(t, b)
	for i, h := range hs {
		mustRead(t, s, h, blobs[i])
	}
}

// A disk that fills while a large blob is streamed into its pack (mid-stream, or at the very end,
// when the last bytes and the record trailer are flushed) fails that put with the write error, not
// as changed content (which the caller would re-hash and retry), and leaves nothing in tmp/ or
// packs/; the batch goes on storing the rest.
func TestDiskFullWhileStreamingALargeBlob(t *testing.T) {
	big := testkit.Noise(335, largeBlob+1)
	h := tree.Sum(big)
	// The size of the blob's pack, from a store with room.
	ref := TestStore(t)
	rb := ref.NewBatch()
	put(t, rb, big)
	commit(t, rb)
	fi, err := os.Stat(ref.index.at(h).pack.path)
	if err != nil {
		t.Fatal(err)
	}
	for name, limit := range map[string]uint64{
		"mid-stream": 2 << 20,
		"last flush": uint64(fi.Size()) - 1,
	} {
		t.Run(name, func(t *testing.T) {
			s := TestStore(t)
			b := s.NewBatch()
			var err error
			os1FileSizeLimit(t, limit, func() {
				_, err = b.PutBlob(bytes.NewReader(big), h, int64(len(big)))
			})
			if !errors.Is(err, syscall.EFBIG) || errors.Is(err, ErrContentChanged) {
				t.Fatalf("PutBlob on a full disk = %v, want EFBIG", err)
			}
			if got := files(t, s.tmpDir); len(got) != 0 {
				t.Fatalf("the failed put left %v in tmp/", got)
			}
			small := text(336, 1000)
			hs, _ := put(t, b, small)
			commit(t, b)
			if s.Has(h) {
				t.Fatal("the blob whose put failed is visible")
			}
			mustRead(t, s, hs, small)
			if got, _ := filepath.Glob(filepath.Join(s.packsDir, "*.pack")); len(got) != 1 {
				t.Fatalf("packs: %v, want only the small blob's", got)
			}
		})
	}
}
