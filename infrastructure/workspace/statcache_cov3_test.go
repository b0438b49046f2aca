package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
)

// iterErr decodes every entry of a record and returns the entries and the iteration's error.
func iterErr(r dirRecord) ([]cachedEntry, error) {
	it := r.iter()
	var out []cachedEntry
	var e cachedEntry
	for it.next(&e) {
		out = append(out, e)
	}
	return out, it.err
}

// TestStatCacheTruncatedEntries: an entry cut short (a file's key or hash, a directory's mode and
// tree) or bytes after the last counted entry end a record's entries with an error, so the walk
// trusts nothing of it; the entries before the damage decode as written.
func TestStatCacheTruncatedEntries(t *testing.T) {
	good := cachedEntry{name: "a", kind: tree.KindFile, key: statKey{Size: 3, Mode: unix.S_IFREG | 0o644}, hash: tree.Hash{7}}
	entry := func(name string, kind tree.Kind, payload int) []byte {
		b := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
		b = append(b, byte(kind))
		return append(b, make([]byte, payload)...)
	}
	body := appendEntry(nil, &good)
	for name, tc := range map[string]struct {
		b     []byte
		count int
	}{
		"file key":      {append(bytes.Clone(body), entry("b", tree.KindFile, keyBytes-1)...), 2},
		"file hash":     {append(bytes.Clone(body), entry("b", tree.KindFile, keyBytes+sha256.Size-1)...), 2},
		"symlink key":   {append(bytes.Clone(body), entry("b", tree.KindSymlink, 3)...), 2},
		"dir tree":      {append(bytes.Clone(body), entry("b", tree.KindDir, 4+sha256.Size-1)...), 2},
		"uncounted":     {append(bytes.Clone(body), entry("b", tree.KindDir, 4+sha256.Size)...), 1},
		"nothing after": {bytes.Clone(body), 1},
	} {
		es, err := iterErr(dirRecord{count: tc.count, body: tc.b})
		if name == "nothing after" {
			if err != nil || len(es) != 1 || es[0] != good {
				t.Errorf("%s: %v %+v", name, err, es)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if len(es) != 1 || es[0] != good {
			t.Errorf("%s: the entry before the damage decoded as %+v", name, es)
		}
	}
}

// TestStatCacheDamagedRecordHeader: a record whose entry count or body length does not fit the
// file is refused, and loading such a cache yields an empty one (everything is read again).
func TestStatCacheDamagedRecordHeader(t *testing.T) {
	header := func(tail ...byte) []byte {
		b := append([]byte(statCacheMagic), 1) // one directory
		b = append(b, 0)                       // rel ""
		b = append(b, recordExact)
		b = append(b, make([]byte, sha256.Size)...)
		b = append(b, tail...)
		s := sha256.Sum256(b)
		return append(b, s[:]...)
	}
	for name, b := range map[string][]byte{
		"count beyond the file":  header(0xff, 0x7f, 0, 0, 0, 0),
		"no body length":         header(0, 1, 2),
		"body beyond the file":   header(0, 0xff, 0, 0, 0),
		"body length, count one": header(1, 200, 0, 0, 0, 1),
	} {
		if _, err := decodeStatCache(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
		path := filepath.Join(t.TempDir(), "statcache")
		if err := saveStatCache(path, b); err != nil {
			t.Fatal(err)
		}
		if c := loadStatCache(path); len(c.dirs) != 0 {
			t.Errorf("%s: loaded %d records of a damaged cache", name, len(c.dirs))
		}
	}
	var none *statCache
	if _, ok := none.dir(""); ok {
		t.Error("no cache has a record")
	}
}

// TestPatchStatCacheDamagedRecord: a restore's patch of a directory whose record is damaged
// drops the record's entries whole and keeps only the files the restore wrote, never exact.
func TestPatchStatCacheDamagedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "statcache")
	kept := cachedEntry{name: "a", kind: tree.KindFile, key: statKey{Size: 1, Mode: unix.S_IFREG | 0o644}, hash: tree.Hash{1}}
	body := appendEntry(nil, &kept)
	body = append(body, 1, 'b', byte(tree.KindFile), 1, 2) // "b", cut short
	w := newCacheWriter(0)
	w.raw("d", dirRecord{hash: tree.Hash{9}, exact: true, count: 2, body: body})
	if err := saveStatCache(path, w.finish()); err != nil {
		t.Fatal(err)
	}
	written := cachedEntry{name: "c", kind: tree.KindFile, key: statKey{Size: 2, Mode: unix.S_IFREG | 0o644}, hash: tree.Hash{3}}
	patchStatCache(path, cachePatch{written: map[string]cachedEntry{"d/c": written}})
	d := cacheDirOf(t, path, "d")
	if d.exact || len(d.entries) != 1 || d.entries[0] != written || d.hash != (tree.Hash{9}) {
		t.Fatalf("the patched damaged record: %+v", d)
	}
}

// TestWriteRecordSortsAndDedups: a record written by a patch has its names sorted and each once,
// as the iteration requires (names strictly increasing).
func TestWriteRecordSortsAndDedups(t *testing.T) {
	f := func(name string, b byte) cachedEntry {
		return cachedEntry{name: name, kind: tree.KindFile, key: statKey{Size: int64(b)}, hash: tree.Hash{b}}
	}
	w := newCacheWriter(0)
	writeRecord(w, "", tree.ZeroHash, []cachedEntry{f("b", 1), f("a", 2), f("b", 3)})
	c, err := decodeStatCache(w.finish())
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.dir("")
	es, err := iterErr(r)
	if err != nil || len(es) != 2 || es[0].name != "a" || es[1] != f("b", 1) || r.exact {
		t.Fatalf("entries %+v, err %v, exact %v", es, err, r.exact)
	}
}

// fakeInfo is a FileInfo that did not come from stat(2).
type fakeInfo struct{}

func (fakeInfo) Name() string       { return "x" }
func (fakeInfo) Size() int64        { return 1 }
func (fakeInfo) Mode() fs.FileMode  { return 0o644 }
func (fakeInfo) ModTime() time.Time { return time.Time{} }
func (fakeInfo) IsDir() bool        { return false }
func (fakeInfo) Sys() any           { return nil }

// TestKeyOfWithoutStat: a FileInfo without the system's stat record has no stat key: nothing may
// be trusted by it.
func TestKeyOfWithoutStat(t *testing.T) {
	if k, ok := keyOf(fakeInfo{}); ok || k != (statKey{}) {
		t.Fatalf("keyOf a FileInfo without a stat record: %+v %v", k, ok)
	}
}

// TestWalkDistrustsADamagedRecord: a record whose checksum holds but whose entries are damaged
// after the first ones vouches for none of them: a file the record claims unchanged (its live stat
// key) with another content's hash, listed before the damage, is read again. (Before the fix the
// walk trusted the entries it decoded before finding the damage, and recorded the file with the
// other content's hash.)
func TestWalkDistrustsADamagedRecord(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "real", 0o644)
	w.write("other", "other content", 0o644) // its content is in the store
	time.Sleep(30 * time.Millisecond)        // past the racy margin: the key alone is trusted
	w.snapshot()
	fi, err := os.Lstat(w.abs("f"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := keyOf(fi)
	lie := cachedEntry{name: "f", kind: tree.KindFile, key: k, hash: sha256.Sum256([]byte("other content"))}
	body := appendEntry(nil, &lie)
	body = append(body, 1, 'g', byte(tree.KindFile), 1, 2) // "g", cut short
	cw := newCacheWriter(0)
	cw.raw("", dirRecord{count: 2, body: body})
	if err := saveStatCache(w.l.StatCache(), cw.finish()); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if e := entryOf(t, w.flatten(snap.Root), "f"); e.Hash != fileEntry("f", "real", 0o644).Hash {
		t.Fatalf("f recorded as %+v: the damaged record was trusted", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "after a damaged record")
}
