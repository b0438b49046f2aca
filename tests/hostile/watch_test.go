package hostile

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The watch service (`plan watch`) lying, dying or impersonated must never make a checkpoint miss
// a change: every checkpoint here is compared with what is on disk.

// watchStatus is `plan watch status --json`.
type watchStatus struct {
	Running   bool   `json:"running"`
	PID       int    `json:"pid"`
	Snapshots int    `json:"snapshots"`
	Walks     int    `json:"walks"`
	Events    string `json:"events"`
}

// startWatch runs `plan watch` in the workspace (foreground, as a process of the test) and waits
// until it answers.
func startWatch(t *testing.T, w *workspace) *running {
	t.Helper()
	p := startPlan(t, w.dir, w.env, "watch")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var st watchStatus
		w.mustJSON(&st, "watch", "status")
		if st.Running && st.PID == p.cmd.Process.Pid {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan watch did not answer: %s", p.kill(t))
		}
	}
}

// requireRecorded checks that checkpoint id holds every path of want with the content on disk.
func requireRecorded(t *testing.T, w *workspace, id string, want ...string) {
	t.Helper()
	got := trackerEntries(w, id)
	for _, rel := range want {
		b, err := os.ReadFile(w.path(rel))
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := got[rel]; !ok || e.SHA256 != trackerSum(string(b)) {
			t.Fatalf("checkpoint %s holds %s as %+v, not what is on disk (%d bytes)", id, rel, e, len(b))
		}
	}
}

func randomContent(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kill -9 the service at random moments while a checkpoint waits for it: the checkpoint walks
// instead (or got the whole answer before), and records every change; the next service replaces
// the stale socket.
func TestWatchKilledMidStream(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 200 {
		w.write(fmt.Sprintf("d%d/f%d", i%10, i), fmt.Sprint(i))
	}
	for trial := range trials(4) {
		svc := startWatch(t, w)
		w.write("d1/f1", fmt.Sprintf("trial %d", trial))
		w.write(fmt.Sprintf("big%d.bin", trial), randomContent(t, 24<<20)) // seconds of reading for the service
		cp := startPlan(t, w.dir, w.env, "--json", "checkpoint", "create")
		time.Sleep(time.Duration(mrand.IntN(300)) * time.Millisecond)
		svc.kill(t)
		r := cp.wait(t)
		if r.code != 0 {
			t.Fatalf("trial %d: the checkpoint failed when the service died: %s", trial, r)
		}
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatal(err)
		}
		requireRecorded(t, w, v.ID, "d1/f1", fmt.Sprintf("big%d.bin", trial))
		// The stale socket: walked around, with a warning.
		w.write("d2/f2", fmt.Sprintf("after trial %d", trial))
		r = w.run("checkpoint", "create")
		if r.code != 0 || !strings.Contains(r.stderr, "the watch service did not answer") {
			t.Fatalf("trial %d: checkpoint with a stale socket: %s", trial, r)
		}
		requireRecorded(t, w, w.checkpoint("check"), "d2/f2")
	}
}

// A process that listens on the socket and answers with a well-formed, plausible snapshot (the
// root of an older checkpoint of this very workspace) is not the service: it does not hold the
// watch lock, and the checkpoint walks.
func TestWatchImpostorIsNotTrusted(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a.txt", "old")
	old := w.checkpoint("old")
	var show struct {
		Root string `json:"root_tree"`
	}
	w.mustJSON(&show, "checkpoint", "show", old)
	ln, err := net.Listen("unix", filepath.Join(w.dir, ".plan", "watch.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	lie := fmt.Sprintf(`{"workspace":%q,"snapshot":{"Root":%q,"Files":1,"Bytes":3}}`+"\n", w.dir, show.Root)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadBytes('\n')
			_, _ = c.Write([]byte(lie))
			_ = c.Close()
		}
	}()
	w.write("a.txt", "new")
	r := w.run("--json", "checkpoint", "create")
	if r.code != 0 || !strings.Contains(r.stderr, "the watch service did not answer") || !strings.Contains(r.stderr, "watch lock") {
		t.Fatalf("checkpoint with an impostor on the socket: %s", r)
	}
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	requireRecorded(t, w, v.ID, "a.txt")
	// A real service cannot start on a socket someone else listens on without the lock... it
	// takes the lock and replaces the socket.
	_ = ln.Close()
	svc := startWatch(t, w)
	w.write("a.txt", "newer")
	requireRecorded(t, w, w.checkpoint("served"), "a.txt")
	svc.kill(t)
}

// A service frozen (SIGSTOP) while more changes happen than the kernel queues
// (fs.inotify.max_queued_events): its queue overflows; once it runs again, its next snapshot
// walks, and records everything. While frozen, commands walk after the connect deadline.
func TestWatchQueueOverflowWalks(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatalf("inotify's queue limit: %v", err)
	}
	var limit int
	if _, err := fmt.Sscan(string(b), &limit); err != nil || limit > 200000 {
		t.Fatalf("max_queued_events %q: too large to overflow in a test", b)
	}
	w := newWorkspace(t, nil)
	w.write("a.txt", "one")
	for i := range 50 {
		w.write(fmt.Sprintf("many/%d/.keep", i), "") // watched by the first snapshot: what is made in them queues events
	}
	svc := startWatch(t, w)
	w.checkpoint("first")
	if err := syscall.Kill(svc.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := range limit + 1000 {
		w.write(fmt.Sprintf("many/%d/f%d", i%50, i), "x")
	}
	w.write("a.txt", "two")
	r := w.run("checkpoint", "create")
	if r.code != 0 || !strings.Contains(r.stderr, "did not answer") {
		t.Fatalf("checkpoint while the service is frozen: %s", r)
	}
	if err := syscall.Kill(svc.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var before watchStatus
	w.mustJSON(&before, "watch", "status")
	w.write("many/0/late", "late")
	id := w.checkpoint("after the overflow")
	requireRecorded(t, w, id, "a.txt", "many/0/late", "many/49/f49")
	var cp struct {
		Files int `json:"files"`
	}
	w.mustJSON(&cp, "checkpoint", "show", id)
	if cp.Files != limit+1000+2+50 {
		t.Fatalf("the checkpoint after the overflow has %d files, want %d", cp.Files, limit+1000+2+50)
	}
	var after watchStatus
	w.mustJSON(&after, "watch", "status")
	if after.Walks != before.Walks+1 {
		t.Fatalf("the service walked %d times after the overflow, want once: %+v then %+v", after.Walks-before.Walks, before, after)
	}
	svc.kill(t)
}
