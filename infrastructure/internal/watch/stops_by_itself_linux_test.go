package watch

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitEnd waits for the service to stop of its own accord and returns what it logged.
func (e *env) waitEnd(logged func() string) string {
	e.t.Helper()
	select {
	case err := <-e.done:
		e.done = nil
		if err != nil {
			e.t.Fatalf("the service ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatal("the service did not stop of its own accord")
	}
	return logged()
}

func logTo() (func(string), func() string) {
	var mu sync.Mutex
	var b strings.Builder
	return func(m string) {
			mu.Lock()
			b.WriteString(m + "\n")
			mu.Unlock()
		}, func() string {
			mu.Lock()
			defer mu.Unlock()
			return b.String()
		}
}

// A service whose workspace is deleted (the project removed, a test's directory cleaned up) stops:
// nothing is left to serve, and it must not linger holding the directory's files.
func TestServiceStopsWhenItsWorkspaceIsGone(t *testing.T) {
	shortenSchedule(t)
	e := newEnv(t)
	e.write("a.txt", "a")
	log, logged := logTo()
	e.start(Options{Log: log})
	if err := os.RemoveAll(e.l.State()); err != nil {
		t.Fatal(err)
	}
	if got := e.waitEnd(logged); !strings.Contains(got, "is gone") {
		t.Fatalf("log: %q", got)
	}
}

// With StopAfter, a service nothing asks for a snapshot and whose workspace does not change stops
// (an agent's hooks start one per turn: it must not outlive the work); snapshots or changes keep it
// running, status queries do not.
func TestServiceStopsAfterItsIdleTime(t *testing.T) {
	shortenSchedule(t)
	e := newEnv(t)
	e.write("a.txt", "a")
	log, logged := logTo()
	e.start(Options{Log: log, StopAfter: 300 * time.Millisecond})
	st, err := Query(t.Context(), e.l)
	if err != nil || st.StopAfter != "300ms" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		if _, err := Query(t.Context(), e.l); err != nil {
			t.Fatalf("the service stopped while it was asked for snapshots: %v", err)
		}
		e.viaClient()
	}
	for i := range 4 {
		time.Sleep(150 * time.Millisecond)
		e.write("a.txt", strings.Repeat("b", i+1))
	}
	if _, err := Query(t.Context(), e.l); err != nil {
		t.Fatalf("the service stopped while the workspace changed: %v", err)
	}
	if got := e.waitEnd(logged); !strings.Contains(got, "nothing asked and nothing changed for 300ms") {
		t.Fatalf("log: %q", got)
	}
}
