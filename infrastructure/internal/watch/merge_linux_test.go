package watch

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
)

// The service merges packs (Options.Merge) once a snapshot it served stored something and no
// command has asked for mergeQuiet; never after a snapshot that stored nothing; a failed merge is
// logged and kept as the last error, and tried again after the next snapshot that stores.
func TestServiceMergesBetweenCommands(t *testing.T) {
	shortenSchedule(t)
	q := mergeQuiet
	t.Cleanup(func() { mergeQuiet = q })
	mergeQuiet = 50 * time.Millisecond
	e := newEnv(t)
	e.write("a.txt", "one")
	var calls atomic.Int32
	var fail atomic.Bool
	logged := make(chan string, 16)
	e.start(Options{
		Merge: func(context.Context) (int, error) {
			calls.Add(1)
			if fail.Load() {
				return 0, errors.New("a pack cannot be read")
			}
			return 3, nil
		},
		Log: func(msg string) { logged <- msg },
	})
	waitFor := func(what string, ok func(Status) bool) Status {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			st, err := Query(context.Background(), e.l)
			if err == nil && ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v %v", what, st, err)
			}
		}
	}
	// The first walk stored the workspace: merged once things are quiet.
	waitFor("the first merge", func(st Status) bool { return st.Merged == 3 })
	e.served() // nothing changed, nothing stored: no merge
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d merges after a snapshot that stored nothing, want 1", n)
	}
	fail.Store(true)
	e.write("a.txt", "two")
	e.served()
	st := waitFor("a failed merge", func(st Status) bool { return strings.Contains(st.LastError, "a pack cannot be read") })
	if st.Merged != 3 {
		t.Fatalf("a failed merge counted: %+v", st)
	}
	select {
	case msg := <-logged:
		if !strings.Contains(msg, "merging the store's small packs failed") {
			t.Fatalf("log %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failed merge was not logged")
	}
	fail.Store(false)
	e.write("a.txt", "three")
	e.served()
	waitFor("the merge after the failure", func(st Status) bool { return st.Merged == 6 })
}

// A session without a pause between its calls still has its packs merged: after mergeBusy
// snapshots that stored something, without waiting for quiet.
func TestServiceMergesABusySession(t *testing.T) {
	shortenSchedule(t)
	q, b := mergeQuiet, mergeBusy
	t.Cleanup(func() { mergeQuiet, mergeBusy = q, b })
	mergeQuiet, mergeBusy = time.Hour, 3
	e := newEnv(t)
	e.write("a.txt", "zero")
	var calls atomic.Int32
	e.start(Options{Merge: func(context.Context) (int, error) { calls.Add(1); return 1, nil }})
	e.write("a.txt", "one")
	e.served() // two stored (the first walk's and this one's): not yet
	time.Sleep(100 * time.Millisecond)
	if calls.Load() != 0 {
		t.Fatal("merged before mergeBusy snapshots stored something, without quiet")
	}
	e.write("a.txt", "two")
	e.served()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a busy session's packs were never merged")
		}
	}
}

// Work done while no service watched (or while its first walk went by, which no event reports)
// is followed by an idle checkpoint once quiet, as a change made at its start would be; a
// workspace that holds what the newest checkpoint holds gets none.
func TestIdleCheckpointOfWhatChangedBeforeTheService(t *testing.T) {
	shortenSchedule(t)
	for _, tc := range []struct {
		name    string
		newest  func(e *env) (tree.Hash, bool, error)
		want    int32
		because string
	}{
		{"a changed workspace", func(*env) (tree.Hash, bool, error) { return tree.Sum([]byte("older")), true, nil }, 1, "changed before the service"},
		{"no checkpoint yet", func(*env) (tree.Hash, bool, error) { return tree.ZeroHash, false, nil }, 1, "never checkpointed"},
		{"an unchanged workspace", func(e *env) (tree.Hash, bool, error) { return e.walked(), true, nil }, 0, "unchanged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("a.txt", "work done before the service")
			var taken atomic.Int32
			e.start(Options{
				Quiet:      50 * time.Millisecond,
				Checkpoint: func(context.Context, checkpoint.Type, string) error { taken.Add(1); return nil },
				Newest:     func(context.Context) (tree.Hash, bool, error) { return tc.newest(e) },
			})
			time.Sleep(500 * time.Millisecond)
			if got := taken.Load(); got != tc.want {
				t.Fatalf("%s: %d idle checkpoints, want %d", tc.because, got, tc.want)
			}
		})
	}
}
