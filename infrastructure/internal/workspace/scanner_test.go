package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

func fileEntry(p, content string, mode uint32) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindFile, Mode: mode, Size: int64(len(content)), Hash: sha256.Sum256([]byte(content))}
}

func dirEntry(p string, mode uint32) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindDir, Mode: mode}
}

func linkEntry(p, target string) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindSymlink, Mode: 0o777, Size: int64(len(target)), Target: target}
}

func TestSnapshotRecordsTheTree(t *testing.T) {
	w := newTestWS(t)
	w.write("a.txt", "alpha\n", 0o644)
	w.write("empty", "", 0o600)
	w.write("bin/run", "#!/bin/sh\n", 0o755)
	w.write("bin/suid", "s", 0o4755)
	w.mkdir("bin", 0o750)
	w.mkdir("emptydir", 0o700)
	w.mkdir("sticky", 0o1777)
	w.write("deep/er/still/f", "deep", 0o444)
	w.symlink("rel", "a.txt")
	w.symlink("abs", "/etc/passwd")
	w.symlink("dangling", "does/not/exist")
	w.symlink("deep/up", "../a.txt")
	w.symlink("dirlink", "deep")
	// Never part of a snapshot: the workspace's own .git and .plan. A nested .git (a vendored
	// repository, or a submodule's gitdir file) is workspace content.
	w.write(".git/HEAD", "ref: refs/heads/main\n", 0o644)
	w.write("deep/.git", "gitdir: elsewhere\n", 0o644)
	w.write(".plan/notes", "state", 0o644)
	// A FIFO is skipped with a warning; the snapshot must not block opening it.
	mkfifo(t, w.abs("pipe"))

	snap := w.snapshot()
	want := []tree.Entry{
		fileEntry("a.txt", "alpha\n", 0o644),
		linkEntry("abs", "/etc/passwd"),
		dirEntry("bin", 0o750),
		fileEntry("bin/run", "#!/bin/sh\n", 0o755),
		fileEntry("bin/suid", "s", 0o4755),
		linkEntry("dangling", "does/not/exist"),
		dirEntry("deep", 0o755),
		fileEntry("deep/.git", "gitdir: elsewhere\n", 0o644),
		dirEntry("deep/er", 0o755),
		dirEntry("deep/er/still", 0o755),
		fileEntry("deep/er/still/f", "deep", 0o444),
		linkEntry("deep/up", "../a.txt"),
		linkEntry("dirlink", "deep"),
		fileEntry("empty", "", 0o600),
		dirEntry("emptydir", 0o700),
		linkEntry("rel", "a.txt"),
		dirEntry("sticky", 0o1777),
	}
	got := w.flatten(snap.Root)
	if d := treetest.Diff(want, got); len(d) > 0 {
		t.Fatalf("snapshot differs:\n  %s", strings.Join(d, "\n  "))
	}
	for _, e := range got {
		if e.Kind == tree.KindSymlink && (!e.Hash.IsZero() || e.Size != int64(len(e.Target))) {
			t.Errorf("symlink %s stored with size %d hash %s", e.Path, e.Size, e.Hash)
		}
	}
	// files counts regular files and symlinks; bytes their logical size (a symlink's is its target).
	var files, size int64
	for _, e := range want {
		if e.Kind != tree.KindDir {
			files++
			size += e.Size
		}
	}
	if snap.Files != files || snap.Bytes != size {
		t.Errorf("Files=%d Bytes=%d, want %d, %d", snap.Files, snap.Bytes, files, size)
	}
	if snap.StoredBytes <= 0 {
		t.Errorf("first snapshot stored %d bytes", snap.StoredBytes)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "pipe") || !strings.Contains(snap.Warnings[0], "named pipe") {
		t.Errorf("warnings %q, want one naming the FIFO", snap.Warnings)
	}
	// Content is stored and reads back.
	for _, e := range got {
		if e.Kind != tree.KindFile {
			continue
		}
		rc, err := w.store.OpenBlob(e.Hash)
		if err != nil {
			t.Fatalf("%s: %v", e.Path, err)
		}
		b, _ := io.ReadAll(rc)
		_ = rc.Close()
		if sha256.Sum256(b) != e.Hash {
			t.Errorf("%s: stored content does not hash to its name", e.Path)
		}
	}

	// Scan sees the same tree without storing, and computes the same directory hashes as the store.
	scanned, err := w.sc.Scan(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(scanned) != len(got) {
		t.Fatalf("Scan has %d entries, Flatten %d", len(scanned), len(got))
	}
	for i := range got {
		// A symlink's size is its target's length on both sides (what lstat reports).
		if scanned[i] != got[i] {
			t.Errorf("Scan entry %+v, stored %+v", scanned[i], got[i])
		}
	}
	// The same workspace snapshots to the same root, storing nothing new.
	again := w.snapshot()
	if again.Root != snap.Root || again.StoredBytes != 0 {
		t.Errorf("second snapshot: root changed %v or stored %d bytes", again.Root != snap.Root, again.StoredBytes)
	}
}

func TestSnapshotEmptyWorkspace(t *testing.T) {
	w := newTestWS(t)
	snap := w.snapshot()
	if got := w.flatten(snap.Root); len(got) != 0 || snap.Files != 0 || snap.Bytes != 0 {
		t.Errorf("empty workspace: %v %+v", got, snap)
	}
	entries, err := w.sc.Scan(t.Context(), nil)
	if err != nil || len(entries) != 0 {
		t.Errorf("Scan of an empty workspace = %v, %v", entries, err)
	}
}

func TestSnapshotHonoursPlanignore(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "# build output\n*.log\n!keep.log\nbuild/\n/rootonly\n\nnode_modules\r\n", 0o644)
	w.write("a.log", "x", 0o644)
	w.write("sub/b.log", "x", 0o644)
	w.write("keep.log", "kept", 0o644)
	w.write("build/out.o", "x", 0o644)
	w.write("src/build/gen.o", "x", 0o644)
	w.write("build.txt", "not a dir", 0o644)
	w.write("rootonly", "x", 0o644)
	w.write("sub/rootonly", "kept", 0o644)
	w.write("node_modules/m/index.js", "x", 0o644)
	mkfifo(t, w.abs("ignored.log"))
	snap := w.snapshot()
	var paths []string
	for _, e := range w.flatten(snap.Root) {
		paths = append(paths, e.Path)
	}
	want := []string{IgnoreFile, "build.txt", "keep.log", "src", "sub", "sub/rootonly"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q", paths, want)
	}
	if len(snap.Warnings) != 0 {
		t.Errorf("an ignored FIFO produced warnings: %q", snap.Warnings)
	}
}

func TestLoadIgnore(t *testing.T) {
	dir := t.TempDir()
	ig, err := LoadIgnore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ig.Skip("x", "x", false) || !ig.Skip(".git", ".git", true) || !ig.Skip("a/.plan", ".plan", true) {
		t.Error("without a .planignore only .git and .plan are skipped")
	}
	var nilIgnore *Ignore
	if nilIgnore.Skip("x", "x", false) || !nilIgnore.Skip(".git", ".git", false) || nilIgnore.Skip("a/.git", ".git", true) {
		t.Error("nil Ignore: only the top .git and .plan are skipped")
	}
	if err := os.Mkdir(filepath.Join(dir, IgnoreFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIgnore(dir); err == nil {
		t.Error("an unreadable .planignore (a directory) was accepted")
	}
}

// tamperCache rewrites the stat cache so that path claims hash h: if a later snapshot reports h,
// it trusted the cache and did not read the file. The records above path lose their exact mark, as
// a restore's patch leaves them, so that the trees are encoded from the entries rather than reused.
func (w *testWS) tamperCache(path string, h tree.Hash) {
	w.t.Helper()
	dirs := readCacheDirs(w.t, w.l.StatCache())
	found := false
	for i := range dirs {
		if tree.Under(path, dirs[i].rel) || dirs[i].rel == "" {
			dirs[i].exact = false
		}
		for j := range dirs[i].entries {
			if e := &dirs[i].entries[j]; join(dirs[i].rel, e.name) == path && e.kind == tree.KindFile {
				e.hash, found = h, true
			}
		}
	}
	if !found {
		w.t.Fatalf("no stat cache entry for %q", path)
	}
	if err := saveStatCache(w.l.StatCache(), encodeCacheDirs(dirs)); err != nil {
		w.t.Fatal(err)
	}
}

func entryOf(t *testing.T, entries []tree.Entry, path string) tree.Entry {
	t.Helper()
	for _, e := range entries {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("no entry %q", path)
	return tree.Entry{}
}

func TestStatCacheSkipsUnchangedFiles(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "original", 0o644)
	w.write("g", "other content", 0o644)
	// Observe well after the files' timestamps, so their cache entries are not racy.
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	first := w.snapshot()
	c := cacheFiles(t, w.l.StatCache())
	// Besides the two files, the cache remembers the root directory's tree (the next delta base).
	root := cacheDirOf(t, w.l.StatCache(), "")
	if len(c) != 2 || root.hash != first.Root || !root.exact || c["f"].racy || c["f"].hash != sha256.Sum256([]byte("original")) {
		t.Fatalf("stat cache after the first snapshot: %+v, root %+v", c, root)
	}
	if again := w.snapshot(); again.Root != first.Root || again.StoredBytes != 0 {
		t.Errorf("a snapshot of an unchanged tree stored %d bytes", again.StoredBytes)
	}

	// Point f's entry at g's (stored) content: a scanner that trusts the cache reports it.
	gHash := sha256.Sum256([]byte("other content"))
	w.tamperCache("f", gHash)
	second := w.snapshot()
	if got := entryOf(t, w.flatten(second.Root), "f"); got.Hash != gHash {
		t.Fatalf("the unchanged file was read again (hash %s), not taken from the stat cache", got.Hash)
	}

	// Same size, restored mtime: only ctime tells. The change must be seen.
	w.tamperCache("f", sha256.Sum256([]byte("original")))
	fi, err := os.Stat(w.abs("f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.abs("f"), []byte("ORIGINAL"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(w.abs("f"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	third := w.snapshot()
	if got := entryOf(t, w.flatten(third.Root), "f"); got.Hash != sha256.Sum256([]byte("ORIGINAL")) {
		t.Fatalf("an in-place change with the same size and mtime went unnoticed")
	}

	// A mode change alone is seen too (and does not need a re-read to get the mode right).
	if err := os.Chmod(w.abs("g"), 0o600); err != nil {
		t.Fatal(err)
	}
	fourth := w.snapshot()
	if got := entryOf(t, w.flatten(fourth.Root), "g"); got.Mode != 0o600 || got.Hash != gHash {
		t.Errorf("mode change: %+v", got)
	}
}

func TestStatCacheRacyEntriesAreReread(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "content", 0o644)
	// Observed at the very moment of the write: the entry is racy.
	w.sc.clock = func() time.Time {
		fi, err := os.Stat(w.abs("f"))
		if err != nil {
			t.Error(err)
			return time.Now()
		}
		return fi.ModTime()
	}
	w.snapshot()
	if c := cacheFiles(t, w.l.StatCache()); !c["f"].racy {
		t.Fatalf("an entry observed in its file's timestamp tick is not marked racy: %+v", c["f"])
	}
	w.write("g", "decoy", 0o644)
	w.snapshot()
	w.tamperCache("f", sha256.Sum256([]byte("decoy")))
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "f"); got.Hash != sha256.Sum256([]byte("content")) {
		t.Fatal("a racy stat cache entry was trusted")
	}
	if c := cacheFiles(t, w.l.StatCache()); c["f"].racy {
		t.Error("re-hashing well after the write should clear the racy mark")
	}
}

func TestStatCacheMissingObjectIsReread(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "content", 0o644)
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	w.snapshot()
	// A cache entry naming an object the store does not hold must not be used.
	w.tamperCache("f", sha256.Sum256([]byte("never stored")))
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "f"); got.Hash != sha256.Sum256([]byte("content")) {
		t.Fatal("a stat cache entry naming a missing object was used")
	}
}

func TestStatCacheDamageMeansReread(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "content", 0o644)
	w.write("g", "decoy", 0o644)
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	w.snapshot()
	w.tamperCache("f", sha256.Sum256([]byte("decoy")))
	b, err := os.ReadFile(w.l.StatCache())
	if err != nil {
		t.Fatal(err)
	}
	b[len(statCacheMagic)+stampLen+3] ^= 0xff
	if err := os.WriteFile(w.l.StatCache(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "f"); got.Hash != sha256.Sum256([]byte("content")) {
		t.Fatal("a damaged stat cache was trusted")
	}
}

func TestRacy(t *testing.T) {
	at := time.Unix(1_700_000_000, 500_000_000)
	ns := func(d time.Duration) int64 { return at.Add(d).UnixNano() }
	cases := []struct {
		name         string
		mtime, ctime int64
		racy         bool
	}{
		{"old", ns(-time.Hour), ns(-time.Hour), false},
		{"mtime in tick", ns(-time.Millisecond), ns(-time.Hour), true},
		{"ctime in tick", ns(-time.Hour), ns(-5 * time.Millisecond), true},
		{"future mtime", ns(time.Hour), ns(-time.Hour), true},
		{"just outside margin", ns(-30 * time.Millisecond), ns(-30 * time.Millisecond), false},
		// Whole-second timestamps (coarse file systems) get a two-second margin.
		{"coarse, 1s old", time.Unix(1_700_000_000, 0).UnixNano(), time.Unix(1_700_000_000, 0).UnixNano(), true},
		{"coarse, 3s old", time.Unix(1_699_999_997, 0).UnixNano(), time.Unix(1_699_999_997, 0).UnixNano(), false},
	}
	for _, c := range cases {
		if got := racy(statKey{Mtime: c.mtime, Ctime: c.ctime}, at); got != c.racy {
			t.Errorf("%s: racy = %v, want %v", c.name, got, c.racy)
		}
	}
}

func TestReadAllDetectsSizeChanges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size int64
		err  error
	}{{5, nil}, {3, errChanged}, {9, errChanged}, {0, errChanged}} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		buf := new([]byte)
		b, err := readAll(f, c.size, buf)
		_ = f.Close()
		if !errors.Is(err, c.err) {
			t.Errorf("size %d: err %v, want %v", c.size, err, c.err)
		}
		if c.err == nil && string(b) != "12345" {
			t.Errorf("size %d: read %q", c.size, b)
		}
	}
}

func TestSnapshotLargeFileStreams(t *testing.T) {
	w := newTestWS(t)
	data := make([]byte, smallFile+12345)
	rand.NewChaCha8([32]byte{1}).Read(data[:1<<20]) // part random, part zero: exercises both
	if err := os.WriteFile(w.abs("big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	e := entryOf(t, w.flatten(snap.Root), "big.bin")
	if e.Size != int64(len(data)) || e.Hash != sha256.Sum256(data) {
		t.Fatalf("large file recorded as %d bytes %s", e.Size, e.Hash)
	}
	rc, err := w.store.OpenBlob(e.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored large file reads back differently (%d bytes, %v)", len(got), err)
	}
}

func TestOpenLive(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "live", 0o644)
	w.symlink("l", "f")
	w.mkdir("d", 0o755)
	mkfifo(t, w.abs("p"))
	rc, err := w.sc.OpenLive("f")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "live" {
		t.Errorf("read %q", b)
	}
	if _, err := w.sc.OpenLive("l"); err == nil {
		t.Error("OpenLive followed a symlink")
	}
	for _, p := range []string{"d", "p"} {
		if _, err := w.sc.OpenLive(p); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("OpenLive(%q) = %v, want ErrInvalid", p, err)
		}
	}
	for _, p := range []string{"../etc/passwd", "/etc/passwd", "", "a/./b"} {
		if _, err := w.sc.OpenLive(p); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("OpenLive(%q) = %v, want ErrInvalid", p, err)
		}
	}
	if _, err := w.sc.OpenLive("missing"); err == nil {
		t.Error("OpenLive of a missing file succeeded")
	}
}

func TestScanCancelled(t *testing.T) {
	w := newTestWS(t)
	for i := range 50 {
		w.write(filepath.Join("d", string(rune('a'+i%26)), "f"), "x", 0o644)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.sc.Snapshot(ctx, nil); err == nil {
		t.Error("a cancelled snapshot succeeded")
	}
	if _, err := w.sc.Scan(ctx, nil); err == nil {
		t.Error("a cancelled scan succeeded")
	}
}

// countingProgress records what a long operation reported. The scanner's workers report
// concurrently (as the CLI's progress bar expects), hence the lock.
type countingProgress struct {
	mu           sync.Mutex
	label        string
	total, added int64
	starts, done int
}

func (p *countingProgress) Start(label string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.total = label, total
	p.starts++
}

func (p *countingProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.added += n
}

func (p *countingProgress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
}

func TestSnapshotReportsProgress(t *testing.T) {
	w := newTestWS(t)
	var want int64
	for i := range 30 {
		content := strings.Repeat("x", i*100)
		w.write(filepath.Join("d", string(rune('a'+i%5)), strings.Repeat("f", i%4+1)+string(rune('a'+i))), content, 0o644)
		want += int64(len(content))
	}
	p := &countingProgress{}
	if _, err := w.sc.Snapshot(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.starts != 1 || p.done != 1 || p.total != want || p.added != want || p.label == "" {
		t.Errorf("progress %+v %d/%d, want one start and done over %d bytes", p.label, p.added, p.total, want)
	}
	// Nothing to read the second time: no progress at all.
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	w.snapshot()
	p = &countingProgress{}
	if _, err := w.sc.Snapshot(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.starts != 0 || p.added != 0 {
		t.Errorf("progress for an unchanged tree: %d starts, %d bytes", p.starts, p.added)
	}
}

func TestSnapshotSkipsSockets(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "x", 0o644)
	l, err := net.Listen("unix", w.abs("sock"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer l.Close()
	snap := w.snapshot()
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "socket") {
		t.Errorf("warnings %q", snap.Warnings)
	}
	if got := w.flatten(snap.Root); len(got) != 1 || got[0].Path != "f" {
		t.Errorf("tree %+v", got)
	}
}

// A file appended to all through the checkpoint (a growing log) does not fail it: after the
// retries, the bytes one read returned are recorded, exactly as hashed, with a warning.
func TestSnapshotOfAFileBeingAppended(t *testing.T) {
	w := newTestWS(t)
	w.write("quiet.txt", "q", 0o644)
	f, err := os.OpenFile(w.abs("app.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := bytes.Repeat([]byte("log line\n"), 1<<10)
	for range 1100 { // 10 MB: read streamed, which gives the writer time to grow it
		f.Write(line)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				f.Write(line)
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	warned := false
	for range 3 {
		snap, err := w.sc.Snapshot(t.Context(), nil)
		if err != nil {
			close(stop)
			<-done
			t.Fatalf("a checkpoint of a growing file failed: %v", err)
		}
		var e tree.Entry
		for _, x := range w.flatten(snap.Root) {
			if x.Path == "app.log" {
				e = x
			}
		}
		r, err := w.store.OpenBlob(e.Hash)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || int64(len(b)) != e.Size || tree.Sum(b) != e.Hash || !bytes.Equal(b, bytes.Repeat(line, len(b)/len(line)+1)[:len(b)]) {
			t.Fatalf("stored %d bytes (%v) for an entry of %d: not a consistent prefix of the log", len(b), err, e.Size)
		}
		for _, m := range snap.Warnings {
			warned = warned || strings.Contains(m, "app.log kept changing")
		}
	}
	close(stop)
	<-done
	if !warned {
		t.Log("the log never changed during a whole read here: the fallback was not exercised")
	}
}

// A path longer than plan can restore is refused when the checkpoint is taken (exit 3, naming
// .planignore), never recorded into a checkpoint that could not be rolled back to; excluded, it is
// no obstacle.
func TestSnapshotRefusesPathsTooLongToRestore(t *testing.T) {
	w := newTestWS(t)
	dir := "deep"
	for len(dir) < tree.MaxPathLen-200 {
		dir += "/" + strings.Repeat("d", 200)
	}
	rel := dir + "/" + strings.Repeat("f", 250)
	// Create it with relative steps: the absolute path is longer than the kernel accepts in one call.
	parts := strings.Split(rel, "/")
	fd, err := unix.Open(w.root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(fd, p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	ffd, err := unix.Openat(fd, parts[len(parts)-1], unix.O_CREAT|unix.O_WRONLY, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(ffd)
	if _, err := w.sc.Snapshot(t.Context(), nil); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), IgnoreFile) {
		t.Fatalf("a path of %d bytes: %v", len(rel), err)
	}
	w.write(IgnoreFile, "deep/\n", 0o644)
	if _, err := w.sc.Snapshot(t.Context(), nil); err != nil {
		t.Fatalf("excluded, the long path still blocks the checkpoint: %v", err)
	}
}
