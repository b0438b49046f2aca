package bucket

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// halving answers ranged reads with half the body asked for, consistently framed: a response cut
// short on its way (by a proxy, say) while the file in the bucket is whole.
type halving struct{ proxy http.Handler }

func (h halving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.Header.Get("Range") == "" {
		h.proxy.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.proxy.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	body = body[:len(body)/2]
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// A ranged read that returns fewer bytes than asked for, of a file whose size did not change, is
// a download cut short (unavailable), not a changed file (integrity).
func TestAShortRangedReadIsUnavailable(t *testing.T) {
	getenv := s3env(t)
	target, err := url.Parse(getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(halving{httputil.NewSingleHostReverseProxy(target)})
	t.Cleanup(srv.Close)
	via := func(k string) string {
		if k == "AWS_ENDPOINT_URL" {
			return srv.URL
		}
		return getenv(k)
	}
	b := freshBucket(t, via, "")
	upload(t, b, "packs/big.pack", random(wholeFetch+blockSize))
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
	if _, err := f.ReadAt(make([]byte, 10), 0); fault.Kind(err) != fault.ErrUnavailable {
		t.Fatalf("a short ranged read: %v", err)
	}
	// The same check of a file that is gone names what the bucket says.
	if err := other.short("packs/none.pack", 10, "a read"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("short of a missing file: %v", err)
	}
}

// DropLocal removes the cached copy and says whether there was one.
func TestDropLocal(t *testing.T) {
	b := freshBucket(t, s3env(t), "")
	if b.Location("") != b.url {
		t.Fatalf("the store's own location is %q", b.Location(""))
	}
	upload(t, b, "packs/a.pack", []byte("pack"))
	if _, err := os.Stat(b.cache.path("packs/a.pack")); err != nil {
		t.Fatalf("an upload left no cached copy: %v", err)
	}
	if !b.DropLocal("packs/a.pack") || b.DropLocal("packs/a.pack") {
		t.Fatal("DropLocal does not say whether there was a copy")
	}
	data, err := b.ReadFile("packs/a.pack")
	if err != nil || string(data) != "pack" {
		t.Fatalf("read after the drop: %q %v", data, err)
	}
}
