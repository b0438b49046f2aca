package bucket

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/planhq/plan/domain/fault"
)

// gate stands between the adapter and MinIO and answers the requests its rule picks with an S3
// error of its own; it counts the object reads it lets through.
type gate struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	rule  func(r *http.Request) (status int, code string)
	reads atomic.Int64
}

func (g *gate) set(rule func(r *http.Request) (int, string)) {
	g.mu.Lock()
	g.rule = rule
	g.mu.Unlock()
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	rule := g.rule
	g.mu.Unlock()
	if rule != nil {
		if status, code := rule(r); status != 0 {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, "<Error><Code>%s</Code><Message>from the test's gate</Message></Error>", code)
			return
		}
	}
	if r.Method == http.MethodGet && isObject(r) {
		g.reads.Add(1)
	}
	g.proxy.ServeHTTP(w, r)
}

// isObject says the request names an object (path-style: /bucket/key), not a bucket.
func isObject(r *http.Request) bool { return strings.Contains(strings.Trim(r.URL.Path, "/"), "/") }

// throughGate returns the environment of a client that reaches MinIO through a new gate.
func throughGate(t *testing.T) (*gate, func(string) string) {
	t.Helper()
	getenv := s3env(t)
	target, err := url.Parse(getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, func(k string) string {
		if k == "AWS_ENDPOINT_URL" {
			return srv.URL
		}
		return getenv(k)
	}
}

// upload puts data in the bucket as name, the way the store installs a pack.
func upload(t *testing.T, b *Backend, name string, data []byte) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "upload")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(src, name); err != nil {
		t.Fatal(err)
	}
}

// replace changes name in the bucket behind every client's back (packs never change: this is
// damage, or tampering).
func replace(t *testing.T, b *Backend, name string, data []byte) {
	t.Helper()
	if _, err := b.client.PutObject(context.Background(), b.bucket, b.key(name), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// A bucket removed under a store is "not found", naming the bucket, for every operation: not an
// empty store, and not a missing file, which the store would take for damage.
func TestABucketRemovedUnderTheStore(t *testing.T) {
	b := freshBucket(t, s3env(t), "p")
	if err := b.client.RemoveBucketWithOptions(context.Background(), b.bucket, minio.RemoveBucketOptions{ForceDelete: true}); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"list":  func() error { _, err := b.List("packs"); return err },
		"read":  func() error { _, err := b.ReadFile("records/w/pending/x"); return err },
		"write": func() error { return b.WriteFile("workspaces/w.json", []byte("{}"), 0o600) },
	} {
		err := op()
		if !errors.Is(err, fault.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "bucket "+b.bucket) {
			t.Errorf("%s in a removed bucket: %v", name, err)
		}
	}
}

// Requests the service refuses in ways the adapter must tell apart: an outage of reads alone, of
// the clock's probe, a missing file on removal, a refusal it has no class for, a bucket it may not
// create, and one another workspace created meanwhile.
func TestRequestsTheServiceRefuses(t *testing.T) {
	g, via := throughGate(t)
	b := freshBucket(t, via, "p")
	upload(t, b, "packs/small.pack", []byte("a small pack"))
	if err := b.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	reopen := func() *Backend {
		t.Helper()
		o, err := Open(context.Background(), Config{URL: "s3://" + b.bucket + "/p", CacheDir: t.TempDir(), Getenv: via, Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		return o
	}
	only := func(method string, status int, code string) func(*http.Request) (int, string) {
		return func(r *http.Request) (int, string) {
			if r.Method == method && isObject(r) {
				return status, code
			}
			return 0, ""
		}
	}

	// Reads of content fail, listing and stats work: a small pack is fetched whole when opened.
	g.set(only(http.MethodGet, http.StatusServiceUnavailable, "ServiceUnavailable"))
	if _, err := reopen().Open("packs/small.pack"); !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "packs/small.pack") {
		t.Errorf("open a pack while reads fail: %v", err)
	}

	// The clock: its probe cannot be written, or cannot be read back.
	g.set(only(http.MethodPut, http.StatusServiceUnavailable, "ServiceUnavailable"))
	if _, err := reopen().Now(); !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("the clock when writes fail: %v", err)
	}
	g.set(only(http.MethodHead, http.StatusForbidden, "AccessDenied"))
	if _, err := reopen().Now(); !errors.Is(err, fault.ErrDenied) || !strings.Contains(err.Error(), "clock") {
		t.Errorf("the clock when its probe cannot be read back: %v", err)
	}

	// A service that says a file to remove is missing: removing it is done.
	g.set(only(http.MethodDelete, http.StatusNotFound, "NoSuchKey"))
	if err := reopen().Remove("records/w/pending/gone"); err != nil {
		t.Errorf("remove a file the service says is missing: %v", err)
	}

	// A refusal with no class of its own is reported as it is, naming the file: neither an
	// outage (retrying will not help) nor a missing file.
	g.set(only(http.MethodGet, http.StatusBadRequest, "InvalidRequest"))
	_, err := reopen().ReadFile("workspaces/w.json")
	if err == nil || fault.Kind(err) != nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "workspaces/w.json") {
		t.Errorf("a refusal with no class: %v", err)
	}
	g.set(nil)

	// Credentials that may use a bucket but not create one.
	fresh := "plan-test-" + strings.ToLower(b.bucket[len(b.bucket)-12:]) + "x"
	g.set(func(r *http.Request) (int, string) {
		if r.Method == http.MethodPut && !isObject(r) {
			return http.StatusForbidden, "AccessDenied"
		}
		return 0, ""
	})
	_, err = Open(context.Background(), Config{URL: "s3://" + fresh, CacheDir: t.TempDir(), Getenv: via, Create: true, Retries: 1})
	if !errors.Is(err, fault.ErrDenied) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("create a bucket the credentials may not create: %v", err)
	}

	// Another workspace creates the bucket between this one's look and its create.
	var made atomic.Bool
	g.set(func(r *http.Request) (int, string) {
		if r.Method == http.MethodGet && !isObject(r) && r.URL.Query().Has("list-type") && made.CompareAndSwap(false, true) {
			if err := b.client.MakeBucket(context.Background(), fresh, minio.MakeBucketOptions{}); err != nil {
				t.Errorf("the other workspace's create: %v", err)
			}
			return http.StatusNotFound, "NoSuchBucket"
		}
		return 0, ""
	})
	o, err := Open(context.Background(), Config{URL: "s3://" + fresh, CacheDir: t.TempDir(), Getenv: via, Create: true})
	if err != nil {
		t.Fatalf("create a bucket another workspace created meanwhile: %v", err)
	}
	t.Cleanup(func() {
		_ = b.client.RemoveBucketWithOptions(context.Background(), fresh, minio.RemoveBucketOptions{ForceDelete: true})
	})
	defer o.Close()
	if !made.Load() {
		t.Fatal("the gate never saw the look for the bucket")
	}
	if err := o.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatalf("write to the bucket made meanwhile: %v", err)
	}
}

// A large file is read by range: a block read twice is fetched once, reads outside the file are
// refused, and a read that finds the whole fetch failing succeeds once the service is back.
func TestRangedReads(t *testing.T) {
	g, via := throughGate(t)
	b := freshBucket(t, via, "")
	data := random(10 << 20)
	upload(t, b, "packs/big.pack", data)
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: via, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f, err := other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Error("a read at a negative offset succeeded")
	}
	if n, err := f.ReadAt(buf, f.Size()); n != 0 || err != io.EOF {
		t.Errorf("a read at the end: %d, %v", n, err)
	}
	read := func(off int64) error {
		t.Helper()
		if _, err := f.ReadAt(buf, off); err != nil {
			return err
		}
		if !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
			t.Fatalf("the read at %d differs", off)
		}
		return nil
	}
	if err := read(10); err != nil {
		t.Fatal(err)
	}
	before, hits := g.reads.Load(), other.Stats().Hits
	if err := read(5000); err != nil {
		t.Fatal(err)
	}
	if g.reads.Load() != before || other.Stats().Hits != hits+1 {
		t.Errorf("a second read in the same block went to the bucket (%d reads, %d before)", g.reads.Load(), before)
	}
	for i := int64(1); i < promoteAfter; i++ {
		if err := read(i * blockSize); err != nil {
			t.Fatal(err)
		}
	}
	// The next block is fetched as the whole file, while reads fail.
	g.set(func(r *http.Request) (int, string) {
		if r.Method == http.MethodGet && isObject(r) {
			return http.StatusServiceUnavailable, "ServiceUnavailable"
		}
		return 0, ""
	})
	if err := read(promoteAfter * blockSize); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("a read whose whole fetch fails: %v", err)
	}
	g.set(nil)
	if err := read(promoteAfter*blockSize + 7); err != nil {
		t.Fatalf("the same read once the service is back: %v", err)
	}
	if _, err := os.Stat(other.cache.path("packs/big.pack")); err != nil {
		t.Errorf("the file was not fetched whole: %v", err)
	}
	before = g.reads.Load()
	if err := read(2*blockSize + 3); err != nil {
		t.Fatal(err)
	}
	if g.reads.Load() != before {
		t.Error("a read after the whole fetch went to the bucket")
	}
}

// A file that changed in the bucket after it was opened (packs never do: damage, or tampering) is
// an integrity error, whether a block comes back short, lies past the new end, or the whole file
// does not have the size it was opened with.
func TestAFileThatChangedAfterItWasOpened(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	data := random(10 << 20)
	upload(t, b, "packs/a.pack", data)
	upload(t, b, "packs/b.pack", data)
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fa, err := other.Open("packs/a.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := other.Open("packs/b.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	replace(t, b, "packs/a.pack", data[:9<<20+1000]) // block 9 now short
	replace(t, b, "packs/b.pack", data[:8<<20+1000]) // block 9 now past the end
	buf := make([]byte, 10)
	for name, f := range map[string]interface {
		ReadAt([]byte, int64) (int, error)
	}{"short": fa, "past the end": fb} {
		if _, err := f.ReadAt(buf, 9<<20+5000); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "packs/") {
			t.Errorf("a block %s: %v", name, err)
		}
	}
	// Enough blocks read (the failed one counted) that the next is a whole fetch, of a file
	// that no longer has the size it was opened with.
	for i := int64(0); i < promoteAfter-1; i++ {
		if _, err := fa.ReadAt(buf, i*blockSize); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fa.ReadAt(buf, 8*blockSize); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "size") {
		t.Errorf("a whole fetch of a file whose size changed: %v", err)
	}
	if _, err := os.Stat(other.cache.path("packs/a.pack")); !os.IsNotExist(err) {
		t.Errorf("the cache kept a copy of the wrong size: %v", err)
	}
	emptyDir(t, other.cache.tmp)
}

// Many readers of one large file at once, past the point where it is fetched whole: every read
// gets the right bytes, and the file ends up in the cache once.
func TestConcurrentRangedReads(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	data := random(12 << 20)
	upload(t, b, "packs/big.pack", data)
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f, err := other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 12)
	for i := range int64(12) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			buf := make([]byte, 4096)
			off := i*blockSize + 100
			if _, err := f.ReadAt(buf, off); err != nil {
				errs <- fmt.Errorf("block %d: %w", i, err)
				return
			}
			if !bytes.Equal(buf, data[off:off+4096]) {
				errs <- fmt.Errorf("block %d differs", i)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if fi, err := os.Stat(other.cache.path("packs/big.pack")); err != nil || fi.Size() != int64(len(data)) {
		t.Errorf("the whole file in the cache: %v", err)
	}
	emptyDir(t, other.cache.tmp)
}

// Credentials limited to the store's prefix (a least-privilege policy: ListBucket only with an
// s3:prefix condition, objects only under the prefix) can open and use the store: no request is
// made on the whole bucket. Outside the prefix they are refused: denied, not unavailable.
func TestPrefixScopedCredentials(t *testing.T) {
	g, via := throughGate(t)
	b := freshBucket(t, via, "p")
	g.set(func(r *http.Request) (int, string) {
		if isObject(r) {
			if strings.HasPrefix(strings.Trim(r.URL.Path, "/"), b.bucket+"/p/") {
				return 0, ""
			}
			return http.StatusForbidden, "AccessDenied"
		}
		if r.Method == http.MethodGet && r.URL.Query().Has("location") {
			return 0, ""
		}
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Query().Get("prefix"), "p/") {
			return http.StatusForbidden, "AccessDenied"
		}
		return 0, ""
	})
	o, err := Open(context.Background(), Config{URL: "s3://" + b.bucket + "/p", CacheDir: t.TempDir(), Getenv: via, Create: true, Retries: 1})
	if err != nil {
		t.Fatalf("open with prefix-scoped credentials: %v", err)
	}
	defer func() { _ = o.Close() }()
	if err := o.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := o.List("workspaces"); err != nil || len(got) != 1 {
		t.Fatalf("list: %v, %v", got, err)
	}
	_, err = Open(context.Background(), Config{URL: "s3://" + b.bucket + "/q", CacheDir: t.TempDir(), Getenv: via, Retries: 1})
	if !errors.Is(err, fault.ErrDenied) || errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("open another prefix: %v", err)
	}
}

// A service that stops answering (it takes a request and sends nothing) is given up on after
// Stall without a byte: unavailable, naming the endpoint, not a wait as long as the freeze.
func TestAStalledServiceIsUnavailable(t *testing.T) {
	g, via := throughGate(t)
	b := freshBucket(t, via, "p")
	if err := b.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	defer close(stalled)
	o, err := Open(context.Background(), Config{URL: "s3://" + b.bucket + "/p", CacheDir: t.TempDir(), Getenv: via, Retries: 1, Stall: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = o.Close() }()
	g.set(func(r *http.Request) (int, string) {
		if r.Method == http.MethodGet && isObject(r) {
			select {
			case <-stalled:
			case <-r.Context().Done():
			}
		}
		return 0, ""
	})
	start := time.Now()
	_, err = o.ReadFile("workspaces/w.json")
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("a read from a stalled service: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("gave up after %v", d)
	}
	g.set(nil)
	if got, err := o.ReadFile("workspaces/w.json"); err != nil || string(got) != "{}" {
		t.Fatalf("once the service answers again: %q, %v", got, err)
	}
}
