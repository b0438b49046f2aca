package bucket

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/objectstore/storetest"
	"github.com/planhq/plan/tests/testkit"
)

// s3env is the MinIO the tests run against (make test starts one), or a skip.
func s3env(t *testing.T) func(string) string {
	t.Helper()
	endpoint := os.Getenv("PLAN_TEST_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("PLAN_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatal("PLAN_TEST_S3_ENDPOINT is not set but PLAN_TEST_REQUIRE_SERVERS=1")
		}
		t.Skip("no S3 server: set PLAN_TEST_S3_ENDPOINT (make test starts MinIO)")
	}
	env := map[string]string{
		"AWS_ENDPOINT_URL":      endpoint,
		"AWS_ACCESS_KEY_ID":     os.Getenv("PLAN_TEST_S3_ACCESS_KEY"),
		"AWS_SECRET_ACCESS_KEY": os.Getenv("PLAN_TEST_S3_SECRET_KEY"),
		"AWS_REGION":            os.Getenv("PLAN_TEST_S3_REGION"),
	}
	return func(k string) string { return env[k] }
}

// freshBucket opens a new bucket (removed with everything in it when the test ends).
func freshBucket(t *testing.T, getenv func(string) string, prefix string) *Backend {
	t.Helper()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "plan-test-" + hex.EncodeToString(rnd[:])
	url := "s3://" + name
	if prefix != "" {
		url += "/" + prefix
	}
	b, err := Open(context.Background(), Config{URL: url, CacheDir: t.TempDir(), Create: true, Getenv: getenv})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for obj := range b.client.ListObjects(ctx, name, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil {
				_ = b.client.RemoveObject(ctx, name, obj.Key, minio.RemoveObjectOptions{})
			}
		}
		_ = b.client.RemoveBucket(ctx, name)
		_ = b.Close()
	})
	return b
}

// An S3 bucket (a real MinIO) passes the shared-store suite, at the bucket's root and under a
// prefix.
func TestSharedBucketStore(t *testing.T) {
	getenv := s3env(t)
	storetest.Run(t, func(t *testing.T) objectstore.Backend { return freshBucket(t, getenv, "") })
	t.Run("under a prefix", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) objectstore.Backend { return freshBucket(t, getenv, "teams/a") })
	})
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, bucket, prefix string }{
		{"s3://bkt", "bkt", ""},
		{"s3://bkt/", "bkt", ""},
		{"s3://bkt/team/ws", "bkt", "team/ws"},
		{"s3://bkt/team/ws/", "bkt", "team/ws"},
	} {
		b, p, err := ParseURL(c.in)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", c.in, b, p, err)
		}
	}
	for _, bad := range []string{"", "b", "file:///x", "s3://", "s3:///x", "s3://u:p@b", "s3://bkt?x=1", "s3://bkt/a/../c", "s3://bkt/a//c", "s3://bkt/./c", "%"} {
		if _, _, err := ParseURL(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseURL(%q): %v, want invalid", bad, err)
		}
	}
}

func TestEndpointOf(t *testing.T) {
	for _, c := range []struct {
		in, host string
		secure   bool
	}{
		{"", "s3.amazonaws.com", true},
		{"http://127.0.0.1:9000", "127.0.0.1:9000", false},
		{"https://minio.example:443/", "minio.example:443", true},
	} {
		h, s, err := endpointOf(c.in)
		if err != nil || h != c.host || s != c.secure {
			t.Errorf("endpointOf(%q) = %q, %v, %v", c.in, h, s, err)
		}
	}
	for _, bad := range []string{"127.0.0.1:9000", "ftp://x", "http://", "http://h/path"} {
		if _, _, err := endpointOf(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("endpointOf(%q): %v, want invalid", bad, err)
		}
	}
}

// A server that does not answer is "unavailable", quickly, one that refuses the credentials
// "denied", and the message names the store but no secret.
func TestUnavailable(t *testing.T) {
	closed := testkit.ClosedPort(t)
	env := map[string]string{"AWS_ENDPOINT_URL": "http://" + closed, "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "sekrit-value"}
	start := time.Now()
	_, err := Open(context.Background(), Config{URL: "s3://bkt", CacheDir: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "s3://bkt") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("closed port: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("giving up on a closed port took %v", d)
	}
	if _, err := Open(context.Background(), Config{URL: "s3://bkt", CacheDir: t.TempDir(), Getenv: func(string) string { return "" }}); !errors.Is(err, fault.ErrUnavailable) ||
		!strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("no credentials: %v", err)
	}
	if _, err := Open(context.Background(), Config{URL: "s3://bkt", Getenv: func(k string) string { return env[k] }}); err == nil {
		t.Fatal("no cache directory accepted")
	}

	getenv := s3env(t)
	wrong := func(k string) string {
		if k == "AWS_SECRET_ACCESS_KEY" {
			return "not-the-secret"
		}
		return getenv(k)
	}
	_, err = Open(context.Background(), Config{URL: "s3://plan-any", CacheDir: t.TempDir(), Getenv: wrong})
	if !errors.Is(err, fault.ErrDenied) || errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "credentials") || strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := Open(context.Background(), Config{URL: "s3://plan-no-such-bucket-here", CacheDir: t.TempDir(), Getenv: getenv}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a missing bucket without Create: %v", err)
	}
}

// The backend's own contract, beyond what the store suite exercises: conditional creation,
// renames, listing of directories, missing files, and the clock.
func TestBackendContract(t *testing.T) {
	b := freshBucket(t, s3env(t), "p")
	if err := b.Create("records/w/pending/r1", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Create("records/w/pending/r1", []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second Create: %v", err)
	}
	if err := b.Rename("records/w/pending/r1", "records/w/r1"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadFile("records/w/r1"); err != nil || string(got) != "one" {
		t.Fatalf("renamed: %q, %v", got, err)
	}
	if _, err := b.ReadFile("records/w/pending/r1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the rename's source: %v", err)
	}
	if err := b.Rename("records/w/pending/none", "records/w/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("renaming a missing file: %v", err)
	}
	if _, err := b.Open("packs/none.pack"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening a missing file: %v", err)
	}
	list, err := b.List("records")
	if err != nil || len(list) != 1 || list[0].Name != "w" || !list[0].Dir {
		t.Fatalf("List(records) = %+v, %v", list, err)
	}
	list, err = b.List("records/w") // pending/ is empty: object storage has no empty directories
	if err != nil || len(list) != 1 || list[0].Name != "r1" || list[0].Dir || list[0].Size != 3 {
		t.Fatalf("List(records/w) = %+v, %v", list, err)
	}
	// ListTree lists every file at any depth, with its ETag (which changes with the content).
	if err := b.WriteFile("workspaces/w.head", []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Create("records/w/pending/r2", []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	tree, err := b.ListTree("records")
	if err != nil || len(tree) != 2 || tree[0].Name != "w/pending/r2" || tree[1].Name != "w/r1" || tree[0].Tag == "" || tree[0].Tag == tree[1].Tag {
		t.Fatalf("ListTree(records) = %+v, %v", tree, err)
	}
	heads, err := b.ListTree("workspaces")
	if err != nil || len(heads) != 1 {
		t.Fatalf("ListTree(workspaces) = %+v, %v", heads, err)
	}
	if err := b.WriteFile("workspaces/w.head", []byte("2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := b.ListTree("workspaces"); err != nil || len(again) != 1 || again[0].Tag == heads[0].Tag {
		t.Fatalf("the ETag of a rewritten file: %+v then %+v, %v", heads, again, err)
	}
	if none, err := b.ListTree("nothing"); err != nil || len(none) != 0 {
		t.Fatalf("ListTree of nothing = %+v, %v", none, err)
	}
	if err := b.Remove("records/w/pending/r2"); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove("records/w/r1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove("records/w/r1"); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	if got := b.Location("packs/x.pack"); !strings.HasSuffix(got, "/p/packs/x.pack") || !strings.HasPrefix(got, "s3://plan-test-") {
		t.Errorf("Location = %q", got)
	}
	now, err := b.Now()
	if err != nil || time.Until(now).Abs() > time.Minute {
		t.Fatalf("Now = %v, %v (local %v)", now, err, time.Now())
	}
	if _, ok := b.LocalRoot(); ok || !b.Shared() || b.Sync("") != nil {
		t.Error("a bucket is remote, shared, and needs no sync")
	}
}

// Reads are served from the cache once fetched; a large file is read by range and fetched whole
// once much of it is read; the cache keeps to its bound and its counters outlive the process.
func TestCache(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	big := make([]byte, 12<<20)
	_, _ = rand.Read(big)
	src := filepath.Join(b.cache.tmp, "upload")
	if err := os.WriteFile(src, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(src, "packs/big.pack"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Fatal("the uploaded file was not adopted by the cache")
	}
	// Another machine: an empty cache.
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv, CacheMax: 20 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f, err := other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != int64(len(big)) {
		t.Fatalf("size %d", f.Size())
	}
	buf := make([]byte, 100)
	for i := range 12 { // 12 reads in 12 different blocks: ranged first, then the whole file
		off := int64(i)*(1<<20) + 77
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, big[off:off+100]) {
			t.Fatalf("read at %d differs", off)
		}
	}
	if _, err := f.ReadAt(buf, int64(len(big))-50); err != io.EOF || !bytes.Equal(buf[:50], big[len(big)-50:]) {
		t.Fatalf("read across the end: %v", err)
	}
	_ = f.Close()
	if _, err := os.Stat(other.cache.path("packs/big.pack")); err != nil {
		t.Fatal("the file was not fetched whole after many ranged reads")
	}
	st := other.Stats()
	if st.Misses == 0 || st.DownloadedBytes < int64(len(big)) {
		t.Fatalf("stats after fetching: %+v", st)
	}
	f, err = other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if other.Stats().Hits <= st.Hits {
		t.Fatal("a second open was not a cache hit")
	}
	// Two more files push the cache past its 20 MiB bound: the least recently used goes.
	for _, name := range []string{"packs/a.pack", "packs/c.pack"} {
		p := filepath.Join(other.cache.tmp, "x")
		if err := os.WriteFile(p, big[:8<<20], 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := other.Install(p, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(other.cache.path("packs/big.pack")); !os.IsNotExist(err) {
		t.Fatal("the least recently used pack was kept past the bound")
	}
	if got := other.Stats().CachedBytes; got > 20<<20 {
		t.Fatalf("the cache holds %d bytes, bound 20 MiB", got)
	}
	// The counters are saved at Close and read by the next process.
	hits := other.Stats().Hits
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: other.cache.dir, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.Stats().Hits; got != hits {
		t.Fatalf("hits after reopening: %d, want %d", got, hits)
	}
	// A file the bucket no longer lists leaves the cache at the next listing.
	if err := b.Remove("packs/a.pack"); err != nil {
		t.Fatal(err)
	}
	if _, err := again.List("packs"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again.cache.path("packs/a.pack")); !os.IsNotExist(err) {
		t.Fatal("a swept pack stayed in the cache")
	}
}

// flaky stands between the adapter and MinIO and fails requests on demand: a server error (503)
// for every request, or refused credentials (403).
type flaky struct {
	proxy *httputil.ReverseProxy
	mode  atomic.Int32 // 0: pass through, 1: 503, 2: 403
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch f.mode.Load() {
	case 1:
		http.Error(w, "<Error><Code>ServiceUnavailable</Code><Message>down</Message></Error>", http.StatusServiceUnavailable)
	case 2:
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>")
	default:
		f.proxy.ServeHTTP(w, r)
	}
}

// Every operation the store uses says "unavailable" when the service fails or refuses it, with
// the store's name and never a secret; passing through again, it works again.
func TestOperationsWhenTheServiceFails(t *testing.T) {
	getenv := s3env(t)
	target, err := url.Parse(getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	via := func(k string) string {
		if k == "AWS_ENDPOINT_URL" {
			return srv.URL
		}
		return getenv(k)
	}
	made := freshBucket(t, via, "p")
	// One retry: the backoff of the default four would make this test slow, not different.
	b, err := Open(context.Background(), Config{URL: "s3://" + made.bucket + "/p", CacheDir: t.TempDir(), Getenv: via, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteFile("workspaces/w.json", []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile("workspaces/w.json", []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadFile("workspaces/w.json"); err != nil || string(got) != "two" {
		t.Fatalf("WriteFile replaces: %q, %v", got, err)
	}
	src := filepath.Join(b.cache.tmp, "pack")
	if err := os.WriteFile(src, bytes.Repeat([]byte("p"), 5<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[int32]struct {
		kind error
		what string
	}{1: {fault.ErrUnavailable, "does not answer"}, 2: {fault.ErrDenied, "credentials"}} {
		f.mode.Store(mode)
		for name, op := range map[string]func() error{
			"list":    func() error { _, err := b.List("packs"); return err },
			"tree":    func() error { _, err := b.ListTree("records"); return err },
			"read":    func() error { _, err := b.ReadFile("records/w/pending/x"); return err },
			"open":    func() error { _, err := b.Open("packs/none.pack"); return err },
			"install": func() error { return b.Install(src, "packs/p.pack") },
			"create":  func() error { return b.Create("gc/m.json", []byte("m"), 0o600) },
			"rename":  func() error { return b.Rename("records/w/pending/x", "records/w/x") },
			"remove":  func() error { return b.Remove("records/w/x") },
		} {
			err := op()
			if !errors.Is(err, want.kind) || !strings.Contains(err.Error(), want.what) ||
				strings.Contains(err.Error(), getenv("AWS_SECRET_ACCESS_KEY")) {
				t.Errorf("%s while the service fails (%d): %v", name, mode, err)
			}
		}
	}
	f.mode.Store(0)
	if _, err := b.List("packs"); err != nil {
		t.Fatalf("after the service came back: %v", err)
	}
	// A file fetched whole whose download is cut short by the service failing: the cache keeps
	// nothing, and the read says the service is unavailable.
	big := make([]byte, 6<<20)
	_, _ = rand.Read(big)
	up := filepath.Join(b.cache.tmp, "big")
	if err := os.WriteFile(up, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(up, "packs/big.pack"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket + "/p", CacheDir: t.TempDir(), Getenv: via, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rf, err := other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	f.mode.Store(1)
	buf := make([]byte, 10)
	if _, err := rf.ReadAt(buf, 5<<20); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("a ranged read while the service fails: %v", err)
	}
	f.mode.Store(0)
	if _, err := rf.ReadAt(buf, 5<<20); err != nil || !bytes.Equal(buf, big[5<<20:5<<20+10]) {
		t.Fatalf("the same read once the service is back: %v", err)
	}
	_ = rf.Close()
}
