package watch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

func TestServiceSnapshotsWhatAWalkRecords(t *testing.T) {
	e := newEnv(t)
	e.write("a/one.txt", "one")
	e.write("b/two.txt", "two")
	e.start(Options{})
	if got, want := e.served(), e.walked(); got != want {
		t.Fatalf("first snapshot: service %s, walk %s", got, want)
	}
	e.write("a/one.txt", "changed")
	e.write("c/d/three.txt", "three")
	if err := os.Remove(e.abs("b/two.txt")); err != nil {
		t.Fatal(err)
	}
	got, warns := e.viaClient()
	if want := e.walked(); got != want || len(warns) != 0 {
		t.Fatalf("after changes: service %s (warnings %v), walk %s", got, warns, want)
	}
	st, err := Query(context.Background(), e.l)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.PID != os.Getpid() || st.Snapshots < 2 || st.Walks != 1 || st.Events != "on" || st.Workspace != e.l.Root {
		t.Fatalf("status %+v: want running, 1 walk and incremental snapshots since", st)
	}
}

func TestClientWalksWithoutAService(t *testing.T) {
	e := newEnv(t)
	e.write("f", "x")
	got, warns := e.viaClient()
	if got != e.walked() || len(warns) != 0 {
		t.Fatalf("no service: %s %v", got, warns)
	}
	if _, err := Query(context.Background(), e.l); !isNotRunning(err) {
		t.Fatalf("Query without a service: %v", err)
	}
	if was, err := Stop(context.Background(), e.l, time.Second); was || err != nil {
		t.Fatalf("Stop without a service: %v %v", was, err)
	}
}

func TestClientWalksWhenTrackingOrDisabled(t *testing.T) {
	e := newEnv(t)
	e.write("f", "x")
	e.start(Options{})
	stop := e.client.Track() // a run's own tracker: the service is not asked
	got, _ := e.viaClient()
	stop()
	e.client.WalkOnly(true)
	got2, _ := e.viaClient()
	if want := e.walked(); got != want || got2 != want {
		t.Fatalf("tracking %s, PLAN_WATCH=0 %s, walk %s", got, got2, want)
	}
	if st, _ := Query(context.Background(), e.l); st.Snapshots != 1 {
		t.Fatalf("the service was asked %d times, want only its own first snapshot", st.Snapshots)
	}
}

// listenAt serves path with fn for every connection (a process that is not a plan service).
func listenAt(t *testing.T, path string, fn func(c net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				fn(c)
			}()
		}
	}()
}

func TestClientNeverTrustsAnImpostor(t *testing.T) {
	defer func(c, i time.Duration) { connectWait, idleWait = c, i }(connectWait, idleWait)
	connectWait, idleWait = 100*time.Millisecond, 200*time.Millisecond
	cases := map[string]func(c net.Conn){
		"silent":  func(c net.Conn) { time.Sleep(time.Second) },
		"garbage": func(c net.Conn) { _, _ = c.Write([]byte("hello\n")) },
		"closes":  func(net.Conn) {},
		"waits then dies": func(c net.Conn) {
			_, _ = c.Write([]byte(`{"wait":true,"workspace":"` + "ROOT" + `"}` + "\n"))
		},
		"another workspace": func(c net.Conn) {
			_, _ = c.Write([]byte(`{"workspace":"/elsewhere","snapshot":{"Root":"` + strings.Repeat("ab", 32) + `"}}` + "\n"))
		},
		"an error": func(c net.Conn) { _, _ = c.Write([]byte(`{"workspace":"ROOT","error":"no"}` + "\n")) },
		"no snapshot": func(c net.Conn) {
			_, _ = c.Write([]byte(`{"workspace":"ROOT"}` + "\n"))
		},
		"keeps waiting past the idle deadline": func(c net.Conn) {
			_, _ = c.Write([]byte(`{"wait":true,"workspace":"ROOT"}` + "\n"))
			time.Sleep(time.Second)
		},
		"a root the store does not hold": func(c net.Conn) {
			_, _ = c.Write([]byte(`{"workspace":"ROOT","snapshot":{"Root":"` + strings.Repeat("cd", 32) + `"}}` + "\n"))
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.write("f", "x")
			root := e.l.Root
			// The impostor even holds the watch lock (it is this process, as the socket's peer is):
			// what it says is still checked.
			unlock, err := lockService(filepath.Join(e.l.State(), LockName))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(unlock)
			listenAt(t, SocketPath(e.l), func(c net.Conn) {
				_, _ = bufio.NewReader(c).ReadBytes('\n')
				fn(&rootConn{Conn: c, root: root})
			})
			got, warns := e.viaClient()
			if got != e.walked() {
				t.Fatalf("the client took %s from an impostor", got)
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "did not answer") {
				t.Fatalf("warnings %v: want one naming the service", warns)
			}
			if _, err := Query(context.Background(), e.l); err == nil || isNotRunning(err) {
				t.Fatalf("Query of an impostor: %v", err)
			}
		})
	}
}

// rootConn writes ROOT as the workspace's root.
type rootConn struct {
	net.Conn
	root string
}

func (c *rootConn) Write(b []byte) (int, error) {
	return c.Conn.Write([]byte(strings.ReplaceAll(string(b), "ROOT", c.root)))
}

func TestAListenerWithoutTheLockIsNotTheService(t *testing.T) {
	e := newEnv(t)
	e.write("f", "x")
	listenAt(t, SocketPath(e.l), func(c net.Conn) { _, _ = c.Write([]byte("{}\n")) })
	lock := filepath.Join(e.l.State(), LockName)
	_, warns := e.viaClient()
	if len(warns) != 1 || !strings.Contains(warns[0], "watch lock") {
		t.Fatalf("no lock file: %v", warns)
	}
	if err := os.WriteFile(lock, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, warns = e.viaClient()
	if len(warns) != 1 || !strings.Contains(warns[0], "no process holds the watch lock") {
		t.Fatalf("a lock file nobody holds: %v", warns)
	}
	if err := os.WriteFile(lock, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, warns = e.viaClient()
	if len(warns) != 1 || !strings.Contains(warns[0], "is not the one that holds") {
		t.Fatalf("a lock file of another pid: %v", warns)
	}
	if err := os.Chmod(lock, 0); err == nil && os.Getuid() != 0 {
		_, warns = e.viaClient()
		if len(warns) != 1 {
			t.Fatalf("an unreadable lock: %v", warns)
		}
	}
}

func TestStatusWithoutAStatus(t *testing.T) {
	e := newEnv(t)
	unlock, err := lockService(filepath.Join(e.l.State(), LockName))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	root := e.l.Root
	listenAt(t, SocketPath(e.l), func(c net.Conn) {
		_, _ = bufio.NewReader(c).ReadBytes('\n')
		_, _ = c.Write([]byte(`{"workspace":"` + root + `"}` + "\n"))
	})
	if _, err := Query(context.Background(), e.l); err == nil || !strings.Contains(err.Error(), "without a status") {
		t.Fatalf("Query: %v", err)
	}
	// Stop: the impostor answers, but its socket never goes away.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if was, err := Stop(ctx, e.l, time.Second); !was || err == nil {
		t.Fatalf("Stop of a socket that stays, cancelled: %v %v", was, err)
	}
	if was, err := Stop(context.Background(), e.l, 50*time.Millisecond); !was || err == nil || !strings.Contains(err.Error(), "still there") {
		t.Fatalf("Stop of a socket that stays: %v %v", was, err)
	}
}

func TestFirstWalkWaitsForTheWorkspaceLock(t *testing.T) {
	e := newEnv(t)
	e.write("f", "x")
	release, err := workspace.NewLocker(e.l).Lock(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	e.startAnswering(Options{})
	time.Sleep(200 * time.Millisecond)
	if st, _ := Query(context.Background(), e.l); st.Snapshots != 0 {
		t.Fatalf("the first walk did not wait for the lock: %+v", st)
	}
	_ = release()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, _ := Query(context.Background(), e.l); st.Snapshots == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first walk did not happen once the lock was free")
		}
	}
	e.stop()
	// Stopped while it waits for the lock: it ends cleanly.
	release, err = workspace.NewLocker(e.l).Lock(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = release() }()
	e.startAnswering(Options{})
	if was, err := Stop(context.Background(), e.l, 5*time.Second); !was || err != nil {
		t.Fatalf("Stop while the first walk waits: %v %v", was, err)
	}
	if err := <-e.done; err != nil {
		t.Fatal(err)
	}
	e.done = nil
}

func TestStaleSocketIsWalkedAroundAndReplaced(t *testing.T) {
	e := newEnv(t)
	e.write("f", "x")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: SocketPath(e.l), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	_ = ln.Close() // the socket file stays, nobody listens: a service killed with -9
	got, warns := e.viaClient()
	if got != e.walked() || len(warns) != 1 {
		t.Fatalf("stale socket: %s %v", got, warns)
	}
	e.start(Options{}) // a new service replaces the stale socket
	if e.served() != e.walked() {
		t.Fatal("the new service differs from a walk")
	}
	e.stop()
	// Stop removes a stale socket.
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: SocketPath(e.l), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	_ = ln.Close()
	if was, err := Stop(context.Background(), e.l, time.Second); was || err != nil {
		t.Fatalf("Stop of a stale socket: %v %v", was, err)
	}
	if _, err := os.Lstat(SocketPath(e.l)); !os.IsNotExist(err) {
		t.Fatalf("the stale socket is still there: %v", err)
	}
}

func TestOneServicePerWorkspace(t *testing.T) {
	e := newEnv(t)
	e.start(Options{})
	store := openStore(t, e.l)
	err := Serve(context.Background(), NewSnapshotter(workspace.NewScanner(e.l, store), e.l, store), store, Options{})
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a second service: %v", err)
	}
	if was, err := Stop(context.Background(), e.l, 5*time.Second); !was || err != nil {
		t.Fatalf("Stop: %v %v", was, err)
	}
	if err := <-e.done; err != nil {
		t.Fatal(err)
	}
	e.done = nil
}

func TestServeRefusals(t *testing.T) {
	e := newEnv(t)
	store := openStore(t, e.l)
	snap := NewSnapshotter(workspace.NewScanner(e.l, store), e.l, store)
	if err := os.WriteFile(SocketPath(e.l), []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), snap, store, Options{}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a file at the socket's path: %v", err)
	}
	if b, _ := os.ReadFile(SocketPath(e.l)); string(b) != "not a socket" {
		t.Fatal("the file at the socket's path was touched")
	}
	if err := Serve(context.Background(), snap, store, Options{Every: time.Hour}); err == nil {
		t.Fatal("Every without Checkpoint and Newest was accepted")
	}
}

func TestRequestsAServiceRefuses(t *testing.T) {
	e := newEnv(t)
	e.start(Options{})
	ask := func(line string) reply {
		c, err := net.Dial("unix", SocketPath(e.l))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		b, err := bufio.NewReader(c).ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := ask("{"); !strings.Contains(r.Error, "malformed") {
		t.Fatalf("malformed: %+v", r)
	}
	if r := ask(`{"op":"status","workspace":"/elsewhere"}`); !strings.Contains(r.Error, "not /elsewhere") {
		t.Fatalf("another workspace: %+v", r)
	}
	if r := ask(`{"op":"dance","workspace":"` + e.l.Root + `"}`); !strings.Contains(r.Error, "unknown request") {
		t.Fatalf("unknown op: %+v", r)
	}
	// A client that sends nothing is dropped after the connect deadline.
	c, err := net.Dial("unix", SocketPath(e.l))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a silent client got an answer")
	}
	_ = c.Close()
	// A snapshot the service cannot take is an error the client walks around.
	if err := os.WriteFile(filepath.Join(e.l.Root, workspace.IgnoreFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(e.l.Root, workspace.IgnoreFile), 0); err == nil && os.Getuid() != 0 {
		if _, err := e.client.ask(context.Background(), nil); err == nil {
			t.Fatal("an unreadable .planignore did not fail the service's snapshot")
		}
	}
}

func TestLongWorkspacePathUsesAPrivateDirectory(t *testing.T) {
	deep := t.TempDir()
	for len(deep) < 120 {
		deep = filepath.Join(deep, "a-rather-long-directory-name")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := workspace.NewLayout(deep)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	p := SocketPath(l)
	if filepath.Dir(p) != runtimeDir() || len(p) > maxSocketPath {
		t.Fatalf("socket path %s", p)
	}
	e := &env{t: t, l: l}
	e.cstore = openStore(t, l)
	e.client = NewSnapshotter(workspace.NewScanner(l, e.cstore), l, e.cstore)
	t.Cleanup(e.stop)
	e.write("f", "x")
	e.start(Options{})
	if e.served() != e.walked() {
		t.Fatal("long path: the service differs from a walk")
	}
	e.stop()
	if err := privateDir(t.TempDir()); err == nil {
		t.Fatal("a directory open to others was taken as private")
	}
	if err := privateDir(filepath.Join(e.abs("f"), "x")); err == nil {
		t.Fatal("a directory that cannot be made was accepted")
	}
}

func TestIdleAndPeriodicCheckpoints(t *testing.T) {
	shortenSchedule(t)
	e := newEnv(t)
	e.write("f", "x")
	type taken struct {
		typ  checkpoint.Type
		note string
		root tree.Hash
	}
	got := make(chan taken, 16)
	var mu sync.Mutex
	var newest tree.Hash
	e.start(Options{
		Every: 300 * time.Millisecond, Quiet: 100 * time.Millisecond,
		Checkpoint: func(ctx context.Context, typ checkpoint.Type, note string) error {
			snap, err := e.srv.Snapshot(ctx, nil) // the checkpoint use case's snapshot, in the service
			if err != nil {
				return err
			}
			mu.Lock()
			newest = snap.Root
			mu.Unlock()
			got <- taken{typ, note, snap.Root}
			return nil
		},
		Newest: func(context.Context) (tree.Hash, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return newest, !newest.IsZero(), nil
		},
	})
	e.write("f", "changed")
	var first taken
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no idle checkpoint")
	}
	if first.typ != checkpoint.Idle || !strings.Contains(first.note, "without changes") || first.root != e.walked() {
		t.Fatalf("first: %+v", first)
	}
	// Active work: a change every 50ms for longer than Every makes a periodic checkpoint.
	deadline := time.Now().Add(5 * time.Second)
	var periodic *taken
	for i := 0; periodic == nil && time.Now().Before(deadline); i++ {
		e.write("f", "work "+string(rune('a'+i%26)))
		time.Sleep(50 * time.Millisecond)
		select {
		case c := <-got:
			if c.typ == checkpoint.Periodic {
				periodic = &c
			}
		default:
		}
	}
	if periodic == nil || !strings.Contains(periodic.note, "of active work") {
		t.Fatal("no periodic checkpoint after active work")
	}
	st, err := Query(context.Background(), e.l)
	if err != nil || st.Every != "300ms" || st.Quiet != "100ms" || st.Checkpoints < 2 {
		t.Fatalf("status %+v %v", st, err)
	}
}

func TestTimedCheckpointSkipsAndFailures(t *testing.T) {
	shortenSchedule(t)
	e := newEnv(t)
	e.write("f", "x")
	var logged = make(chan string, 16)
	fail := true
	e.start(Options{
		Quiet: 50 * time.Millisecond,
		Checkpoint: func(context.Context, checkpoint.Type, string) error {
			return fault.Conflict("busy")
		},
		Newest: func(context.Context) (tree.Hash, bool, error) {
			if fail {
				return tree.ZeroHash, false, fault.Unavailable("database down")
			}
			return e.walked(), true, nil // what the workspace holds: skipped
		},
		Log: func(msg string) { logged <- msg },
	})
	e.write("f", "y")
	select {
	case msg := <-logged:
		if !strings.Contains(msg, "database down") {
			t.Fatalf("log %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no idle checkpoint was tried")
	}
	if st, _ := Query(context.Background(), e.l); !strings.Contains(st.LastError, "database down") {
		t.Fatalf("status %+v", st)
	}
	e.stop()
	fail = false
	e.start(Options{Quiet: 50 * time.Millisecond,
		Checkpoint: func(context.Context, checkpoint.Type, string) error { return fault.Conflict("busy") },
		Newest:     func(context.Context) (tree.Hash, bool, error) { return e.walked(), true, nil },
	})
	e.write("f", "y") // the same content as the newest checkpoint once more: skipped
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := Query(context.Background(), e.l)
		if st.Skipped > 0 && st.Checkpoints == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no skip: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shortenSchedule makes the schedule tick fast until the test's services have stopped (a cleanup
// registered first runs last).
func shortenSchedule(t *testing.T) {
	a, k := activeWindow, scheduleTick
	t.Cleanup(func() { activeWindow, scheduleTick = a, k })
	activeWindow, scheduleTick = time.Second, 10*time.Millisecond
}

// A snapshot that stored nothing, of a tree the command's view of the store already holds,
// answers without refreshing that view (a listing and a stat of every pack, most of a no-change
// checkpoint's cost through the service); one that stored something refreshes it, and so does an
// answer naming a tree the view does not hold.
func TestClientRefreshesItsViewOnlyWhenItMust(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one")
	e.start(Options{})
	first := e.served()
	if !e.cstore.Present(first) {
		t.Fatal("the first snapshot's tree is not in the client's view")
	}
	// A pack the client's view has not read (written by another handle of the store).
	elsewhere := []byte("written elsewhere\n")
	b := openStore(t, e.l).NewBatch()
	if _, err := b.PutBlob(bytes.NewReader(elsewhere), tree.Sum(elsewhere), int64(len(elsewhere))); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := e.served(); got != first {
		t.Fatalf("no change: %s, want %s", got, first)
	}
	if e.cstore.Present(tree.Sum(elsewhere)) {
		t.Fatal("a snapshot that stored nothing refreshed the client's view")
	}
	e.write("a.txt", "two")
	second := e.served()
	if second == first || !e.cstore.Present(second) || !e.cstore.Present(tree.Sum(elsewhere)) {
		t.Fatal("a snapshot that stored a change did not refresh the client's view")
	}
	// A view that has not read the store (opened lazily, as commands open it) is refreshed even
	// when the service stored nothing.
	lazy, err := objectstore.OpenBackendLazy(objectstore.NewDir(e.l.Objects(), false), e.l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lazy.Close() }()
	client := NewSnapshotter(workspace.NewScanner(e.l, lazy), e.l, lazy)
	snap, err := client.ask(context.Background(), nil)
	if err != nil || snap.Root != second || snap.StoredBytes != 0 || !lazy.Present(second) {
		t.Fatalf("a lazy view: %+v, %v", snap, err)
	}
}
