package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

func TestJournal(t *testing.T) {
	w := newTestWS(t)
	j := NewJournal(w.l)
	if op, err := j.Pending(); err != nil || op != nil {
		t.Fatalf("empty journal: %+v, %v", op, err)
	}
	if err := j.Clear(); err != nil {
		t.Fatalf("clearing an empty journal: %v", err)
	}
	op := port.Operation{
		ID: "0123456789abcdef01234567", Kind: "rollback", Direction: port.Forward,
		Source: tree.Sum([]byte("a")), Target: tree.Sum([]byte("b")),
		TargetCheckpoint: "t", BackupCheckpoint: "b", StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Counts: port.ChangeCounts{Added: 1, Modified: 2, Deleted: 3}, Detail: []byte(`{"x":1}`),
	}
	if err := j.Write(op); err != nil {
		t.Fatal(err)
	}
	got, err := j.Pending()
	if err != nil || got == nil {
		t.Fatalf("Pending = %+v, %v", got, err)
	}
	if got.ID != op.ID || got.Direction != op.Direction || got.Source != op.Source || got.Target != op.Target ||
		!got.StartedAt.Equal(op.StartedAt) || got.Counts != op.Counts || string(got.Detail) != string(op.Detail) {
		t.Errorf("round trip: %+v, want %+v", got, op)
	}
	op.Direction = port.Backward
	if err := j.Write(op); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.Pending(); got.Direction != port.Backward {
		t.Errorf("Write did not replace the record: %+v", got)
	}
	// Atomic replacement leaves no temp files behind.
	des, _ := os.ReadDir(w.l.State())
	for _, de := range des {
		if strings.Contains(de.Name(), ".tmp") {
			t.Errorf("temp file left: %s", de.Name())
		}
	}
	if err := j.Clear(); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Pending(); err != nil || got != nil {
		t.Errorf("after Clear: %+v, %v", got, err)
	}
}

func TestJournalDamaged(t *testing.T) {
	w := newTestWS(t)
	j := NewJournal(w.l)
	for name, content := range map[string]string{
		"garbage":   "not json",
		"truncated": `{"id":"0123456789abcdef01234567","kind":"rollb`,
		"no id":     `{"kind":"rollback","direction":"forward"}`,
		"empty":     "",
		"wrong":     `[1,2,3]`,
	} {
		if err := os.WriteFile(w.l.JournalFile(), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		op, err := j.Pending()
		if !errors.Is(err, fault.ErrIntegrity) || op != nil {
			t.Errorf("%s: Pending = %+v, %v; want ErrIntegrity", name, op, err)
		}
		if err != nil && !strings.Contains(err.Error(), "plan doctor") {
			t.Errorf("%s: message %q does not say how to repair", name, err)
		}
	}
	// Unreadable (a directory in its place) is an error, not "nothing pending".
	_ = os.Remove(w.l.JournalFile())
	if err := os.Mkdir(w.l.JournalFile(), 0o700); err != nil {
		t.Fatal(err)
	}
	if op, err := j.Pending(); err == nil || op != nil {
		t.Errorf("journal is a directory: %+v, %v", op, err)
	}
	if err := j.Write(port.Operation{ID: "x"}); err == nil {
		t.Error("Write over a directory succeeded")
	}
}

func TestLockerConflict(t *testing.T) {
	w := newTestWS(t)
	first := NewLocker(w.l)
	unlock, err := first.Lock(t.Context(), "rollback")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := os.ReadFile(first.ownerPath())
	if err != nil || !strings.Contains(string(owner), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(string(owner), "rollback") {
		t.Errorf("owner file %q, %v", owner, err)
	}

	// A second Locker opens its own descriptor, so flock conflicts even inside one process.
	second := NewLocker(w.l)
	second.Wait = 200 * time.Millisecond
	start := time.Now()
	_, err = second.Lock(t.Context(), "checkpoint create")
	waited := time.Since(start)
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("second Lock = %v, want ErrConflict", err)
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "plan rollback") {
		t.Errorf("the conflict does not name the holder: %v", err)
	}
	if waited < 150*time.Millisecond || waited > 2*time.Second {
		t.Errorf("waited %v for a busy lock, want about 200ms", waited)
	}
	if _, ok, err := second.TryLock("x"); ok || err != nil {
		t.Errorf("TryLock on a held lock = %v, %v", ok, err)
	}

	// A cancelled context ends the wait with the context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := second.Lock(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with a cancelled context = %v", err)
	}

	// Released: the next holder gets it at once, and the owner file is gone.
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.ownerPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("owner file left after unlock: %v", err)
	}
	unlock2, err := second.Lock(t.Context(), "checkpoint create")
	if err != nil {
		t.Fatal(err)
	}
	_ = unlock2()
	unlock3, ok, err := second.TryLock("recover")
	if err != nil || !ok {
		t.Fatalf("TryLock on a free lock = %v, %v", ok, err)
	}
	_ = unlock3()
}

func TestLockerHolderUnknown(t *testing.T) {
	w := newTestWS(t)
	first := NewLocker(w.l)
	unlock, err := first.Lock(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_ = os.Remove(first.ownerPath())
	second := NewLocker(w.l)
	second.Wait = 50 * time.Millisecond
	if _, err := second.Lock(t.Context(), "y"); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "unknown process") {
		t.Errorf("Lock = %v", err)
	}
}

func TestLockerBadPath(t *testing.T) {
	l := &Locker{path: filepath.Join(t.TempDir(), "missing", "lock"), Wait: 50 * time.Millisecond}
	_, err := l.Lock(t.Context(), "x")
	if err == nil || errors.Is(err, fault.ErrConflict) {
		t.Errorf("Lock on an impossible path = %v, want a plain error", err)
	}
	if _, ok, err := l.TryLock("x"); ok || err == nil {
		t.Errorf("TryLock on an impossible path = %v, %v", ok, err)
	}
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	l, err := NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Initialized() {
		t.Error("fresh directory reported initialised")
	}
	if err := l.RequireInitialized(); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "plan init") {
		t.Errorf("RequireInitialized = %v", err)
	}
	for range 2 { // idempotent
		if err := l.Init(); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{l.State(), l.Objects(), l.Archive(), l.Logs()} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if err := os.WriteFile(l.Database(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !l.Initialized() || l.RequireInitialized() != nil {
		t.Error("with a database the workspace is initialised")
	}
	for _, p := range []string{l.Database(), l.StatCache(), l.JournalFile(), l.LockFile()} {
		if filepath.Dir(p) != l.State() {
			t.Errorf("%s is not directly under .plan", p)
		}
	}
	if l.Staging() != ".plan/staging" {
		t.Errorf("Staging = %q", l.Staging())
	}

	// A symlinked root resolves to the real directory; a relative one becomes absolute.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if l2, err := NewLayout(link); err != nil || l2.Root != l.Root {
		t.Errorf("NewLayout(symlink) = %q, %v; want %q", l2.Root, err, l.Root)
	}
	t.Chdir(dir)
	if l3, err := NewLayout("."); err != nil || l3.Root != l.Root {
		t.Errorf("NewLayout(.) = %q, %v", l3.Root, err)
	}
	if _, err := NewLayout(filepath.Join(dir, "missing")); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("missing root: %v", err)
	}
	if _, err := NewLayout(l.Database()); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("file as root: %v", err)
	}
}

func TestGitHead(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const sha2 = "fedcba9876543210fedcba9876543210fedcba98"
	write := func(t *testing.T, p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := func(t *testing.T, root string) (string, bool) {
		t.Helper()
		l, err := NewLayout(root)
		if err != nil {
			t.Fatal(err)
		}
		return NewGitHead(l).Head()
	}
	t.Run("loose ref", func(t *testing.T) {
		repo := t.TempDir()
		write(t, filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(repo, ".git/refs/heads/main"), sha+"\n")
		if got, ok := head(t, repo); !ok || got != sha {
			t.Errorf("Head = %q, %v", got, ok)
		}
		// A workspace in a subdirectory of the repository finds it by walking up.
		sub := filepath.Join(repo, "a/b")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if got, ok := head(t, sub); !ok || got != sha {
			t.Errorf("from a subdirectory: %q, %v", got, ok)
		}
	})
	t.Run("packed ref", func(t *testing.T) {
		repo := t.TempDir()
		write(t, filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(repo, ".git/packed-refs"),
			"# pack-refs with: peeled fully-peeled sorted \n"+sha2+" refs/heads/other\n"+sha+" refs/heads/main\n^"+sha2+"\n")
		if got, ok := head(t, repo); !ok || got != sha {
			t.Errorf("Head = %q, %v", got, ok)
		}
	})
	t.Run("detached", func(t *testing.T) {
		repo := t.TempDir()
		write(t, filepath.Join(repo, ".git/HEAD"), sha2+"\n")
		if got, ok := head(t, repo); !ok || got != sha2 {
			t.Errorf("Head = %q, %v", got, ok)
		}
		write(t, filepath.Join(repo, ".git/HEAD"), "not-a-sha\n")
		if _, ok := head(t, repo); ok {
			t.Error("a malformed detached HEAD was accepted")
		}
	})
	t.Run("unborn branch", func(t *testing.T) {
		repo := t.TempDir()
		write(t, filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/main\n")
		if got, ok := head(t, repo); ok {
			t.Errorf("Head = %q on an unborn branch", got)
		}
	})
	t.Run("worktree", func(t *testing.T) {
		main := t.TempDir()
		write(t, filepath.Join(main, ".git/refs/heads/feature"), sha2+"\n")
		write(t, filepath.Join(main, ".git/HEAD"), "ref: refs/heads/main\n")
		wtGit := filepath.Join(main, ".git/worktrees/wt")
		write(t, filepath.Join(wtGit, "HEAD"), "ref: refs/heads/feature\n")
		write(t, filepath.Join(wtGit, "commondir"), "../..\n")
		wt := t.TempDir()
		write(t, filepath.Join(wt, ".git"), "gitdir: "+wtGit+"\n")
		if got, ok := head(t, wt); !ok || got != sha2 {
			t.Errorf("worktree Head = %q, %v", got, ok)
		}
		// A relative gitdir resolves against the directory holding the .git file.
		rel, err := filepath.Rel(wt, wtGit)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, ".git"), "gitdir: "+rel+"\n")
		if got, ok := head(t, wt); !ok || got != sha2 {
			t.Errorf("relative gitdir: %q, %v", got, ok)
		}
		write(t, filepath.Join(wt, ".git"), "garbage\n")
		if _, ok := head(t, wt); ok {
			t.Error("a malformed .git file was accepted")
		}
	})
	t.Run("escaping and looping refs", func(t *testing.T) {
		repo := t.TempDir()
		write(t, filepath.Join(repo, "secret"), sha+"\n")
		write(t, filepath.Join(repo, ".git/HEAD"), "ref: ../secret\n")
		if _, ok := head(t, repo); ok {
			t.Error("a ref escaping .git was followed")
		}
		write(t, filepath.Join(repo, ".git/HEAD"), "ref: refs/heads/a\n")
		write(t, filepath.Join(repo, ".git/refs/heads/a"), "ref: refs/heads/b\n")
		write(t, filepath.Join(repo, ".git/refs/heads/b"), "ref: refs/heads/a\n")
		if _, ok := head(t, repo); ok {
			t.Error("a symbolic ref loop resolved")
		}
		write(t, filepath.Join(repo, ".git/refs/heads/b"), sha+"\n")
		if got, ok := head(t, repo); !ok || got != sha {
			t.Errorf("symbolic chain: %q, %v", got, ok)
		}
	})
	t.Run("no repository", func(t *testing.T) {
		if got, ok := head(t, t.TempDir()); ok {
			t.Errorf("Head = %q outside a repository", got)
		}
	})
}

// The journal's format is this adapter's, and it is where a damaged record is found: bad JSON, a
// malformed or missing tree hash, an unknown direction are integrity errors naming the file.
func TestJournalRefusesDamagedRecords(t *testing.T) {
	w := newTestWS(t)
	j := NewJournal(w.l)
	good := `"id":"0123456789abcdef01234567","kind":"rollback","direction":"forward","source_tree":"` +
		tree.Sum([]byte("a")).String() + `"`
	for name, body := range map[string]string{
		"not json":        `{"id":`,
		"bad hash":        `{` + good + `,"target_tree":"XYZ"}`,
		"upper-case hash": `{` + good + `,"target_tree":"` + strings.ToUpper(tree.Sum([]byte("b")).String()) + `"}`,
		"no target":       `{` + good + `}`,
		"no id":           `{"direction":"forward"}`,
		"sideways":        strings.Replace(`{`+good+`,"target_tree":"`+tree.Sum([]byte("b")).String()+`"}`, `"forward"`, `"sideways"`, 1),
	} {
		if err := os.WriteFile(w.l.JournalFile(), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if op, err := j.Pending(); !errors.Is(err, fault.ErrIntegrity) || op != nil || !strings.Contains(err.Error(), "journal") {
			t.Errorf("%s: Pending = %+v, %v; want an integrity error", name, op, err)
		}
	}
}

// A union of ignore rules excludes what any of them excludes, including everything under an
// excluded directory; rules recorded in a stored tree are read from its .planignore.
func TestIgnoreUnion(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "build/\n", 0o644)
	w.write("build/out", "o", 0o644)
	w.write("keep", "k", 0o644)
	stored := w.snapshot().Root
	w.write(IgnoreFile, "*.env\n", 0o644)
	live, err := LoadIgnore(w.root)
	if err != nil {
		t.Fatal(err)
	}
	fromTree, err := ignoreOfTree(w.store, stored)
	if err != nil {
		t.Fatal(err)
	}
	u := live.With(fromTree, nil)
	for p, want := range map[string]bool{"secret.env": true, "build/out": true, "build": true, "keep": false, "x/y.env": true, ".planignore": false} {
		if got := u.SkipPath(p, p == "build"); got != want {
			t.Errorf("SkipPath(%s) = %v, want %v", p, got, want)
		}
	}
	if live.SkipPath("build/out", false) || fromTree.SkipPath("secret.env", false) {
		t.Error("a rule set alone excludes what only the other has")
	}
	if none, err := ignoreOfTree(w.store, tree.Hash{}); err != nil || none.SkipPath("a", false) {
		t.Errorf("the empty tree: %v", err)
	}
	if _, err := ignoreOfTree(w.store, tree.Sum([]byte("missing"))); err == nil {
		t.Error("a tree that cannot be read was taken for one without rules")
	}
}

// A .planignore that is not a regular file, or that has a line longer than 64 KiB, is invalid
// input (exit 3), refused at once: a FIFO never blocks the command holding the lock.
func TestLoadIgnoreRefusesOddFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, IgnoreFile)
	mkfifo(t, p)
	done := make(chan error, 1)
	go func() { _, err := LoadIgnore(dir); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadIgnore blocked on a FIFO")
	}
	os.Remove(p)
	if err := os.Symlink("/etc/passwd", p); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIgnore(dir); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("symlink: %v", err)
	}
	os.Remove(p)
	long := "ok\n" + strings.Repeat("x", 70<<10) + "\n"
	if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIgnore(dir); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("long line: %v", err)
	}
}

// The file system root and the home directory itself are no place for a workspace; anything below
// them is.
func TestDangerous(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for root, want := range map[string]string{
		string(filepath.Separator):  "file system root",
		home:                        "home directory",
		filepath.Join(home, "proj"): "",
		filepath.Dir(home):          "",
	} {
		if got := (Layout{Root: root}).Dangerous(); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("Dangerous(%s) = %q, want %q", root, got, want)
		}
	}
	t.Setenv("HOME", "")
	if got := (Layout{Root: home}).Dangerous(); got != "" {
		t.Errorf("no home: %q", got)
	}
}
