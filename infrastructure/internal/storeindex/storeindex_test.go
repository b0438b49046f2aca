package storeindex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/bucket"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// store is a shared store the tests make workspaces on: a file:// directory or an S3 bucket.
type store struct {
	url    string
	getenv func(string) string
	be     objectstore.Backend
}

func fileStore(t *testing.T) *store {
	dir := t.TempDir()
	return &store{url: "file://" + dir, be: objectstore.NewDir(dir, true)}
}

func s3Store(t *testing.T) *store {
	env := servertest.S3(t)
	vars := map[string]string{"AWS_ENDPOINT_URL": env.Endpoint, "AWS_ACCESS_KEY_ID": env.AccessKey,
		"AWS_SECRET_ACCESS_KEY": env.SecretKey, "AWS_REGION": env.Region}
	s := &store{url: "s3://" + env.Bucket + "/p", getenv: func(k string) string { return vars[k] }}
	return s
}

// backend opens the store's backend (an S3 store only once a workspace made its bucket).
func (s *store) backend(t *testing.T) objectstore.Backend {
	t.Helper()
	if s.be != nil {
		return s.be
	}
	b, err := bucket.Open(context.Background(), bucket.Config{URL: s.url, CacheDir: t.TempDir(), Getenv: s.getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	s.be = b
	return b
}

// workspace makes a workspace on s with one checkpoint of content.
func (s *store) workspace(t *testing.T, content string) *bootstrap.App {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: root, Init: true, Store: s.url, Getenv: s.getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	checkpoint(t, app, content)
	return app
}

func checkpoint(t *testing.T, app *bootstrap.App, content string) tree.Hash {
	t.Helper()
	if err := os.WriteFile(filepath.Join(app.Services.Layout.Root, "f.txt"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cp, err := app.Services.Checkpoints.Create(context.Background(), application.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return cp.Root()
}

func read(t *testing.T, be objectstore.Backend) *storeindex.View {
	t.Helper()
	v, err := storeindex.Read(be)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func live(v *storeindex.View) []tree.Hash {
	var out []tree.Hash
	for _, w := range v.Sorted() {
		out = append(out, w.Live()...)
	}
	slices.SortFunc(out, func(a, b tree.Hash) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// A gc's second reading of an unchanged store reads no workspace's files: the summary proves them
// unchanged. A workspace that committed since is read again, only its new records replayed.
func TestSummaryServesUnchangedWorkspaces(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) *store{"file": fileStore, "s3": s3Store} {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			a := s.workspace(t, "a")
			s.workspace(t, "b")
			s.workspace(t, "c")
			be := s.backend(t)
			first := read(t, be)
			if first.Summary != "" || first.Read != 3 || len(first.Workspaces) != 3 {
				t.Fatalf("first reading: summary %q, %d of %d read", first.Summary, first.Read, len(first.Workspaces))
			}
			if _, err := storeindex.WriteSummary(be, first); err != nil {
				t.Fatal(err)
			}
			second := read(t, be)
			if second.Summary == "" || second.Read != 0 {
				t.Fatalf("second reading: summary %q, %d read", second.Summary, second.Read)
			}
			listing, err := storeindex.ReadForListing(be)
			if err != nil || listing.Read != 0 || !slices.Equal(live(listing), live(second)) {
				t.Fatalf("a reading for listing: %+v, %v", listing, err)
			}
			if !slices.Equal(live(first), live(second)) {
				t.Fatalf("the summary keeps %v, the records %v", live(second), live(first))
			}
			root := checkpoint(t, a, "a2")
			third := read(t, be)
			if third.Read != 1 {
				t.Fatalf("after one workspace committed, %d were read, want 1", third.Read)
			}
			if !slices.Contains(live(third), root) {
				t.Fatalf("the new checkpoint's root %s is not live", root)
			}
			w := third.Workspaces[a.WorkspaceID()]
			if w.FromSummary || w.State.Summary().Checkpoints != 2 {
				t.Fatalf("the changed workspace: from summary %v, %d checkpoints", w.FromSummary, w.State.Summary().Checkpoints)
			}
		})
	}
}

func summaryPath(t *testing.T, dir string) string {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(dir, "gc", "summary-*.json"))
	if err != nil || len(got) != 1 {
		t.Fatalf("want one summary, found %v (%v)", got, err)
	}
	return got[0]
}

// A summary whose bytes do not match its name, or that another format wrote, is ignored: every
// workspace is read.
func TestDamagedSummaryIsIgnored(t *testing.T) {
	s := fileStore(t)
	s.workspace(t, "a")
	s.workspace(t, "b")
	be := s.backend(t)
	if _, err := storeindex.WriteSummary(be, read(t, be)); err != nil {
		t.Fatal(err)
	}
	p := summaryPath(t, be.(*objectstore.Dir).Root())
	_ = os.Chmod(p, 0o600)
	if err := os.WriteFile(p, []byte(`{"format":1,"workspaces":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := read(t, be); v.Summary != "" || v.Read != 2 {
		t.Fatalf("a damaged summary was used: %q, %d read", v.Summary, v.Read)
	}
	// The next one written replaces it.
	name, err := storeindex.WriteSummary(be, read(t, be))
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Base(summaryPath(t, be.(*objectstore.Dir).Root())); got != name {
		t.Fatalf("the summaries left are %s, want %s", got, name)
	}
	if v := read(t, be); v.Summary != name || v.Read != 0 {
		t.Fatalf("the new summary was not used: %q, %d read", v.Summary, v.Read)
	}
}

// A workspace whose newest records were deleted after the summary was written is read again, and
// its hole found: the summary is never trusted past its high-water mark.
func TestSummaryNotTrustedPastTheHighWaterMark(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	be := s.backend(t)
	if _, err := storeindex.WriteSummary(be, read(t, be)); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, a, "a2")
	id := a.WorkspaceID()
	recs := objectstore.NewRecords(be, objectstore.WorkspaceRecords(id))
	names, err := recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	if err := recs.Remove(names[len(names)-1]); err != nil {
		t.Fatal(err)
	}
	w := read(t, be).Workspaces[id]
	if w.FromSummary || !strings.Contains(w.Hole, "newest records are missing") {
		t.Fatalf("a workspace whose newest record is gone: from summary %v, hole %q", w.FromSummary, w.Hole)
	}
	// Its high-water mark gone too, the summary still does not match: read again.
	if err := os.Remove(filepath.Join(be.(*objectstore.Dir).Root(), "workspaces", id+".head")); err != nil {
		t.Fatal(err)
	}
	if w := read(t, be).Workspaces[id]; w.FromSummary {
		t.Fatal("a workspace whose high-water mark is gone came from the summary")
	}
}

// A retired workspace keeps its pinned checkpoints, and whatever it recorded after its retirement
// (a command that opened it before), and nothing else of its own.
func TestRetiredWorkspaceKeepsPinsAndLaterRecords(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) *store{"file": fileStore, "s3": s3Store} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := mk(t)
			a := s.workspace(t, "a1")
			pinned := checkpoint(t, a, "a2")
			if _, err := a.Services.Checkpoints.SetPinned(ctx, "@", true); err != nil {
				t.Fatal(err)
			}
			plain := checkpoint(t, a, "a3")
			be := s.backend(t)
			if _, err := storeindex.WriteSummary(be, read(t, be)); err != nil {
				t.Fatal(err)
			}
			id := a.WorkspaceID()
			r, already, err := storeindex.Retire(be, id, "here", time.Now())
			if err != nil || already || r.Head == 0 {
				t.Fatalf("retire: %+v, already %v, %v", r, already, err)
			}
			w := read(t, be).Workspaces[id]
			if w.FromSummary || w.Retired == nil {
				t.Fatalf("a workspace retired since the summary was taken from it (%v) or not seen retired", w.FromSummary)
			}
			if got := w.Live(); !slices.Equal(got, []tree.Hash{pinned}) {
				t.Fatalf("a retired workspace keeps %v, want only its pinned %s (not %s)", got, pinned, plain)
			}
			// The workspace was open before: what it commits now stays live.
			later := checkpoint(t, a, "a4")
			v := read(t, be)
			if !slices.Contains(v.Workspaces[id].Live(), later) || slices.Contains(v.Workspaces[id].Live(), plain) {
				t.Fatalf("after retirement, live %v: want %s, not %s", v.Workspaces[id].Live(), later, plain)
			}
			if _, err := storeindex.WriteSummary(be, v); err != nil {
				t.Fatal(err)
			}
			again := read(t, be).Workspaces[id]
			if !again.FromSummary || !slices.Equal(again.Live(), v.Workspaces[id].Live()) {
				t.Fatalf("from the summary (%v), a retired workspace keeps %v, want %v", again.FromSummary, again.Live(), v.Workspaces[id].Live())
			}
			r2, already, err := storeindex.Retire(be, id, "there", time.Now())
			if err != nil || !already || !r2.RetiredAt.Equal(r.RetiredAt) {
				t.Fatalf("retiring again: %+v, already %v, %v", r2, already, err)
			}
		})
	}
}

// Retiring a workspace the store does not hold is not found, and writes nothing; a damaged
// retirement is refused, never taken for none.
func TestRetireRefusals(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	be := s.backend(t)
	if _, _, err := storeindex.Retire(be, "0123456789abcdef01234567", "h", time.Now()); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("retiring an unknown workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(be.(*objectstore.Dir).Root(), "workspaces", "0123456789abcdef01234567.retired")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused retirement wrote its marker: %v", err)
	}
	id := a.WorkspaceID()
	if err := os.WriteFile(filepath.Join(be.(*objectstore.Dir).Root(), "workspaces", id+".retired"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storeindex.Read(be); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged retirement: %v", err)
	}
	if _, _, err := storeindex.Retire(be, id, "h", time.Now()); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("retiring over a damaged retirement: %v", err)
	}
}

// A workspace described in the store with no records left is a hole, never an empty workspace;
// the summary never holds it.
func TestWorkspaceWithoutRecordsIsAHole(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	be := s.backend(t)
	id := a.WorkspaceID()
	if err := os.RemoveAll(filepath.Join(be.(*objectstore.Dir).Root(), "records", id)); err != nil {
		t.Fatal(err)
	}
	v := read(t, be)
	if w := v.Workspaces[id]; w == nil || w.Hole == "" {
		t.Fatalf("a described workspace without records: %+v", w)
	}
	if _, err := storeindex.WriteSummary(be, v); err != nil {
		t.Fatal(err)
	}
	if w := read(t, be).Workspaces[id]; w.FromSummary || w.Hole == "" {
		t.Fatalf("a workspace with a hole came from the summary (%v), hole %q", w.FromSummary, w.Hole)
	}
}

// A gc killed between writing its summary and removing the older one leaves both: the newest is
// read, and the next summary written removes them all but itself.
func TestTwoSummariesLeftByAKill(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	be := s.backend(t)
	first, err := storeindex.WriteSummary(be, read(t, be))
	if err != nil {
		t.Fatal(err)
	}
	root := be.(*objectstore.Dir).Root()
	kept, err := os.ReadFile(filepath.Join(root, "gc", first))
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, a, "a2")
	time.Sleep(2 * time.Millisecond)
	second, err := storeindex.WriteSummary(be, read(t, be))
	if err != nil {
		t.Fatal(err)
	}
	// Put the first back, as a kill before its removal would have left it.
	if err := os.WriteFile(filepath.Join(root, "gc", first), kept, 0o400); err != nil {
		t.Fatal(err)
	}
	v := read(t, be)
	if v.Summary != second || v.Read != 0 {
		t.Fatalf("with two summaries, read %q (%d workspaces read), want the newest %q", v.Summary, v.Read, second)
	}
	time.Sleep(2 * time.Millisecond)
	third, err := storeindex.WriteSummary(be, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Base(summaryPath(t, root)); got != third {
		t.Fatalf("left %s, want only %s", got, third)
	}
}
