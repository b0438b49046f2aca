package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// env is a workspace with a service run in this process (its own scanner and store, as in its
// own process) and a client (another scanner and store, as a command's).
type env struct {
	t      *testing.T
	l      workspace.Layout
	client *Snapshotter
	cstore *objectstore.Store
	cancel context.CancelFunc
	done   chan error
	srv    *Snapshotter
}

func newEnv(t *testing.T) *env {
	t.Helper()
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	cs := openStore(t, l)
	e := &env{t: t, l: l, cstore: cs, client: NewSnapshotter(workspace.NewScanner(l, cs), l, cs)}
	t.Cleanup(e.stop)
	return e
}

func openStore(t *testing.T, l workspace.Layout) *objectstore.Store {
	t.Helper()
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// start runs a service with opts and waits until it answers and its first walk is done (what
// changes after that is an event).
func (e *env) start(opts Options) {
	e.t.Helper()
	e.startAnswering(opts)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, err := Query(context.Background(), e.l); err == nil && st.Snapshots > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the service's first walk did not end")
		}
	}
}

// startAnswering runs a service with opts and waits until it answers.
func (e *env) startAnswering(opts Options) {
	e.t.Helper()
	if e.done != nil {
		e.t.Fatal("a service already runs")
	}
	store := openStore(e.t, e.l)
	e.srv = NewSnapshotter(workspace.NewScanner(e.l, store), e.l, store)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- Serve(ctx, e.srv, store, opts) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := Query(context.Background(), e.l); err == nil {
			return
		}
		select {
		case err := <-e.done:
			e.done = nil
			e.t.Fatalf("the service ended at once: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the service did not answer")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the service (if one runs) and checks it ended cleanly.
func (e *env) stop() {
	if e.done == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("the service ended with %v", err)
	}
	e.done = nil
}

func (e *env) abs(rel string) string { return filepath.Join(e.l.Root, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := e.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// walked is the root a full walk records now (a scanner of its own, not tracking).
func (e *env) walked() tree.Hash {
	e.t.Helper()
	snap, err := workspace.NewScanner(e.l, e.cstore).Snapshot(context.Background(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Root
}

// served is the root the service answers with; it fails the test when the service does not.
func (e *env) served() tree.Hash {
	e.t.Helper()
	snap, err := e.client.ask(context.Background(), nil)
	if err != nil {
		e.t.Fatalf("the service did not answer: %v", err)
	}
	return snap.Root
}

// viaClient is the client's Snapshot (service or walk), with its warnings.
func (e *env) viaClient() (tree.Hash, []string) {
	e.t.Helper()
	snap, err := e.client.Snapshot(context.Background(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Root, snap.Warnings
}

func isNotRunning(err error) bool { return errors.Is(err, ErrNotRunning) }
