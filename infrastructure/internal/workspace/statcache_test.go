package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
)

// cacheDir is one stat cache record, decoded whole (for tests).
type cacheDir struct {
	rel     string
	hash    tree.Hash
	exact   bool
	entries []cachedEntry
}

// readCacheDirs decodes every record of the stat cache at path, in file order.
func readCacheDirs(t testing.TB, path string) []cacheDir {
	t.Helper()
	c := loadStatCache(path)
	var out []cacheDir
	for rel, r := range c.dirs {
		d := cacheDir{rel: rel, hash: r.hash, exact: r.exact}
		it := r.iter()
		var e cachedEntry
		for it.next(&e) {
			d.entries = append(d.entries, e)
		}
		if it.err != nil {
			t.Fatalf("record %q: %v", rel, it.err)
		}
		out = append(out, d)
	}
	return out
}

func encodeCacheDirs(dirs []cacheDir) []byte {
	size := 0
	for _, d := range dirs {
		size += len(d.rel) + 48 + len(d.entries)*(keyBytes+48)
	}
	w := newCacheWriter(size, tree.Hash{})
	for _, d := range dirs {
		w.beginDir(d.rel, d.hash, d.exact)
		for i := range d.entries {
			w.entry(&d.entries[i])
		}
		w.endDir()
	}
	return w.finish()
}

// cacheFiles maps the path of every file entry of the stat cache at path to it.
func cacheFiles(t testing.TB, path string) map[string]cachedEntry {
	t.Helper()
	out := map[string]cachedEntry{}
	for _, d := range readCacheDirs(t, path) {
		for _, e := range d.entries {
			if e.kind == tree.KindFile {
				out[join(d.rel, e.name)] = e
			}
		}
	}
	return out
}

func cacheDirOf(t testing.TB, path, rel string) cacheDir {
	t.Helper()
	for _, d := range readCacheDirs(t, path) {
		if d.rel == rel {
			return d
		}
	}
	t.Fatalf("the stat cache has no record of directory %q", rel)
	return cacheDir{}
}

func randomCacheDirs(r *rand.Rand) []cacheDir {
	hash := func() (h tree.Hash) {
		for j := range h {
			h[j] = byte(r.Uint32())
		}
		return h
	}
	var dirs []cacheDir
	for d := range 20 {
		cd := cacheDir{rel: strings.Repeat("d/", d%4) + "x" + strconv.Itoa(d), hash: hash(), exact: d%2 == 0}
		if d == 0 {
			cd.rel = ""
		}
		for i := range d * 3 {
			e := cachedEntry{name: "e" + strconv.Itoa(1000+i), racy: i%3 == 0}
			switch i % 3 {
			case 0:
				e.kind, e.hash = tree.KindFile, hash()
				e.key = statKey{Size: r.Int64(), Mtime: -r.Int64(), Ctime: r.Int64(), Ino: r.Uint64(), Dev: r.Uint64(), Mode: r.Uint32()}
			case 1:
				e.kind, e.target = tree.KindSymlink, "../t"+strconv.Itoa(i)
				e.key = statKey{Size: 5, Mtime: r.Int64(), Mode: unix.S_IFLNK | 0o777}
			case 2:
				e.kind, e.mode, e.hash = tree.KindDir, 0o755, hash()
			}
			cd.entries = append(cd.entries, e)
		}
		dirs = append(dirs, cd)
	}
	return dirs
}

func TestStatCacheCodec(t *testing.T) {
	dirs := randomCacheDirs(rand.New(rand.NewPCG(3, 4)))
	b := encodeCacheDirs(dirs)
	got, err := decodeStatCache(bytes.Clone(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.dirs) != len(dirs) {
		t.Fatalf("%d directories, want %d", len(got.dirs), len(dirs))
	}
	for _, d := range dirs {
		r, ok := got.dir(d.rel)
		if !ok || r.hash != d.hash || r.exact != d.exact || r.count != len(d.entries) {
			t.Fatalf("record %q: %+v, want %+v", d.rel, r, d)
		}
		it := r.iter()
		var e cachedEntry
		for i := range d.entries {
			if !it.next(&e) || e != d.entries[i] {
				t.Fatalf("record %q entry %d: %+v, want %+v", d.rel, i, e, d.entries[i])
			}
		}
		if it.next(&e) || it.err != nil {
			t.Fatalf("record %q: more entries than written, or damage (%v)", d.rel, it.err)
		}
	}
	empty, err := decodeStatCache(newCacheWriter(0, tree.Hash{}).finish())
	if err != nil || len(empty.dirs) != 0 {
		t.Errorf("empty cache: %v, %v", empty, err)
	}
	// Every truncation and every single-byte flip is refused, never half-trusted.
	for n := range len(b) {
		if _, err := decodeStatCache(bytes.Clone(b[:n])); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	for i := 0; i < len(b); i += 7 {
		d := bytes.Clone(b)
		d[i] ^= 0x40
		if _, err := decodeStatCache(d); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
	if c := loadStatCache(filepath.Join(t.TempDir(), "missing")); len(c.dirs) != 0 {
		t.Error("a missing cache is not empty")
	}
}

// TestStatCacheStructuralDamage: a record whose checksum holds but whose structure does not (a
// bug's output, or a crafted file) is refused whole, or, inside an entry list, ends the list with
// an error: the walk then trusts nothing of that directory.
func TestStatCacheStructuralDamage(t *testing.T) {
	reseal := func(body []byte) []byte {
		s := sha256.Sum256(body)
		return append(bytes.Clone(body), s[:]...)
	}
	good := encodeCacheDirs(randomCacheDirs(rand.New(rand.NewPCG(5, 6))))
	body := good[:len(good)-sha256.Size]
	for name, bad := range map[string][]byte{
		"trailing":  reseal(append(bytes.Clone(body), 0)),
		"count":     reseal(append(cacheHead(), 0xff, 0xff, 0xff, 0x7f)),
		"short":     reseal(append(cacheHead(), 1, 1, 'a', 1, 2, 3)),
		"path":      reseal(append(cacheHead(), 1, 100, 'a')),
		"bad magic": reseal(append([]byte("PLANSC2\n"), 0)),
		"duplicate": encodeCacheDirs([]cacheDir{{rel: "a"}, {rel: "a"}}),
	} {
		if _, err := decodeStatCache(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	entries := func(es ...cachedEntry) error {
		c, err := decodeStatCache(encodeCacheDirs([]cacheDir{{rel: "", exact: true, entries: es}}))
		if err != nil {
			return err
		}
		r, _ := c.dir("")
		it := r.iter()
		var e cachedEntry
		for it.next(&e) {
		}
		return it.err
	}
	file := func(name string) cachedEntry { return cachedEntry{name: name, kind: tree.KindFile} }
	if err := entries(file("a"), file("b")); err != nil {
		t.Fatalf("sorted entries refused: %v", err)
	}
	for name, es := range map[string][]cachedEntry{
		"unsorted":   {file("b"), file("a")},
		"duplicate":  {file("a"), file("a")},
		"empty name": {file("")},
		"bad kind":   {{name: "a", kind: 9}},
		"no target":  {{name: "a", kind: tree.KindSymlink}},
	} {
		if entries(es...) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPatchStatCache: a restore's patch replaces and removes entries, drops the records of removed
// directories, keeps untouched records byte for byte and clears exact on touched directories and
// their ancestors only.
func TestPatchStatCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "statcache")
	h := func(b byte) tree.Hash { return tree.Hash{b} }
	file := func(name string, b byte) cachedEntry {
		return cachedEntry{name: name, kind: tree.KindFile, hash: h(b), key: statKey{Size: int64(b), Mode: unix.S_IFREG | 0o644}}
	}
	dir := func(name string, b byte) cachedEntry {
		return cachedEntry{name: name, kind: tree.KindDir, mode: 0o755, hash: h(b)}
	}
	dirs := []cacheDir{
		{rel: "", hash: h(1), exact: true, entries: []cachedEntry{dir("a", 2), dir("b", 3), file("top", 4)}},
		{rel: "a", hash: h(2), exact: true, entries: []cachedEntry{dir("deep", 5), file("f", 6), file("g", 7)}},
		{rel: "a/deep", hash: h(5), exact: true, entries: []cachedEntry{file("x", 8)}},
		{rel: "b", hash: h(3), exact: true, entries: []cachedEntry{dir("gone", 9), file("keep", 10)}},
		{rel: "b/gone", hash: h(9), exact: true, entries: []cachedEntry{file("y", 11)}},
	}
	if err := saveStatCache(path, encodeCacheDirs(dirs)); err != nil {
		t.Fatal(err)
	}
	patchStatCache(path, cachePatch{
		written: map[string]cachedEntry{"a/deep/x": file("x", 20), "a/deep/new": file("new", 21)},
		removed: []string{"a/g", "b/gone", "b/gone/y"},
	})
	got := map[string]cacheDir{}
	for _, d := range readCacheDirs(t, path) {
		got[d.rel] = d
	}
	names := func(d cacheDir) (out []string) {
		for _, e := range d.entries {
			out = append(out, e.name)
		}
		return out
	}
	if _, ok := got["b/gone"]; ok || len(got) != 4 {
		t.Fatalf("records after the patch: %v", got)
	}
	for rel, want := range map[string]struct {
		exact bool
		names string
	}{
		"":       {false, "a b top"},
		"a":      {false, "deep f"},
		"a/deep": {false, "new x"},
		"b":      {false, "keep"},
	} {
		d := got[rel]
		if d.exact != want.exact || strings.Join(names(d), " ") != want.names {
			t.Errorf("record %q: exact %v, entries %v; want %v, %s", rel, d.exact, names(d), want.exact, want.names)
		}
	}
	if e := got["a/deep"].entries[1]; e.hash != h(20) {
		t.Errorf("a/deep/x not replaced: %+v", e)
	}
	if got["a"].hash != h(2) {
		t.Error("a touched directory lost its tree hash (its next delta base)")
	}

	// Untouched records survive exactly (and stay exact).
	if err := saveStatCache(path, encodeCacheDirs(dirs)); err != nil {
		t.Fatal(err)
	}
	patchStatCache(path, cachePatch{written: map[string]cachedEntry{"b/keep": file("keep", 30)}})
	for _, d := range readCacheDirs(t, path) {
		wantExact := d.rel != "" && d.rel != "b"
		if d.exact != wantExact {
			t.Errorf("record %q exact %v, want %v", d.rel, d.exact, wantExact)
		}
	}
}

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
		b := append(cacheHead(), 1) // one directory
		b = append(b, 0)            // rel ""
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
	w := newCacheWriter(0, tree.Hash{})
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
	w := newCacheWriter(0, tree.Hash{})
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
	cw := newCacheWriter(0, tree.Hash{})
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

// cacheHead is a stat cache's header up to its directory count: the magic and no view stamp.
func cacheHead() []byte {
	return append([]byte(statCacheMagic), make([]byte, stampLen)...)
}
