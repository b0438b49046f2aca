package workspace

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	w := newCacheWriter(size)
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
	empty, err := decodeStatCache(newCacheWriter(0).finish())
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
		"count":     reseal(append([]byte(statCacheMagic), 0xff, 0xff, 0xff, 0x7f)),
		"short":     reseal(append([]byte(statCacheMagic), 1, 1, 'a', 1, 2, 3)),
		"path":      reseal(append([]byte(statCacheMagic), 1, 100, 'a')),
		"bad magic": reseal(append([]byte("PLANSC1\n"), 0)),
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
