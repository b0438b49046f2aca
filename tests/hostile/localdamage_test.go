package hostile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/planhq/plan/tests/testkit"
)

// Local damage is local (issue 21): damage of the local cache, or a download cut on its way, is
// never taken for damage of the shared store; verify --read-data reads the store itself; what a
// repair healed stops failing verify at once.

// localdamageS3 is a workspace on a fresh bucket holding one checkpoint of n random files of size
// bytes each, and the client of that bucket.
func localdamageS3(t *testing.T, n, size int) (*workspace, s3Store, *minio.Client, string, map[string]string) {
	t.Helper()
	st := newS3Store(t, "ws")
	w := newWorkspace(t, st.Env, "--store", st.URL)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	files := map[string]string{}
	for i := range n {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		name := "f" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		files[name] = string(b)
		w.write(name, string(b))
	}
	id := w.checkpoint("data")
	return w, st, st.Client(t), id, files
}

// localdamageKeys lists the bucket's keys under the store's prefix and dir.
func localdamageKeys(t *testing.T, c *minio.Client, st s3Store, dir string) []string {
	t.Helper()
	var out []string
	for o := range c.ListObjects(context.Background(), st.Bucket, minio.ListObjectsOptions{Prefix: "ws/" + dir + "/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		out = append(out, o.Key)
	}
	return out
}

// localdamageCachedPacks returns the cached copies of the store's packs.
func localdamageCachedPacks(t *testing.T, w *workspace) []string {
	t.Helper()
	ps, err := filepath.Glob(w.state("cache/files/packs/*.pack"))
	if err != nil || len(ps) == 0 {
		t.Fatalf("no cached pack (%v)", err)
	}
	return ps
}

// localdamageRollback changes every file, rolls back to id and checks every file came back.
func localdamageRollback(t *testing.T, w *workspace, id string, files map[string]string) {
	t.Helper()
	for name := range files {
		w.write(name, "changed")
	}
	w.must("--yes", "rollback", "--to-checkpoint", id)
	for name, want := range files {
		if w.read(name) != want {
			t.Fatalf("%s is not restored byte-exactly", name)
		}
	}
}

type localdamageVerify struct {
	OK       bool     `json:"ok"`
	ReadFrom string   `json:"read_from"`
	Healed   []string `json:"healed"`
	Unhealed []string `json:"unhealed"`
}

// A flipped byte in the local cache's copy of a pack (and then of its index too), the bucket's
// intact: the copy is dropped and the bucket read again. A rollback restores everything; verify --read-data reads the bucket (and
// says so) and passes; no damage marker reaches the shared store; doctor --repair finds nothing.
func TestLocalDamageCacheCopyIsNotTheStore(t *testing.T) {
	w, st, c, id, files := localdamageS3(t, 30, 20000)
	for _, p := range localdamageCachedPacks(t, w) {
		testkit.FlipMiddleByte(t, p)
	}
	localdamageRollback(t, w, id, files)

	w.must("verify") // the store opened: its indexes cached again
	idxs, err := filepath.Glob(w.state("cache/files/packs/*.idx"))
	if err != nil || len(idxs) == 0 {
		t.Fatalf("no cached index (%v)", err)
	}
	for _, p := range append(localdamageCachedPacks(t, w), idxs...) {
		testkit.FlipMiddleByte(t, p)
	}
	var v localdamageVerify
	w.mustJSON(&v, "verify", "--read-data")
	if !v.OK || v.ReadFrom != strings.TrimSuffix(st.URL, "/") {
		t.Fatalf("verify --read-data: ok %v, read from %q, want the store %s", v.OK, v.ReadFrom, st.URL)
	}
	if m := localdamageKeys(t, c, st, "damaged.d"); len(m) > 0 {
		t.Fatalf("damage of the local cache was marked as damage of the shared store: %v", m)
	}
	if out := w.must("doctor", "--repair"); strings.Contains(out, "FAIL") {
		t.Fatalf("doctor --repair after damage of the cache only:\n%s", out)
	}
	localdamageRollback(t, w, id, files)
}

// A download cut mid-body (the server's answer closed after 1 MiB) is a store that did not answer:
// verify --read-data and rollback exit 1 `unavailable` and mark nothing; read directly afterwards,
// the store verifies clean.
func TestLocalDamageCutDownloadIsUnavailable(t *testing.T) {
	w, st, c, id, files := localdamageS3(t, 3, 3<<20)
	u, err := url.Parse(st.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	px.cut(1 << 20)
	cut := &workspace{t: t, dir: w.dir, env: s3Env(st.S3Env, px.url())}

	if err := os.RemoveAll(w.state("cache")); err != nil {
		t.Fatal(err)
	}
	cut.expect(1, "unavailable", "verify", "--read-data")
	for name := range files {
		w.write(name, "changed")
	}
	if err := os.RemoveAll(w.state("cache")); err != nil {
		t.Fatal(err)
	}
	cut.expect(1, "unavailable", "--yes", "rollback", "--to-checkpoint", id)
	if m := localdamageKeys(t, c, st, "damaged.d"); len(m) > 0 {
		t.Fatalf("a cut download marked intact objects damaged: %v", m)
	}
	var v localdamageVerify
	w.mustJSON(&v, "verify", "--read-data")
	if !v.OK {
		t.Fatal("the store does not verify clean read directly")
	}
	localdamageRollback(t, w, id, files)
}

// A flipped byte in the bucket's pack while the local cache's copy is intact: verify --read-data
// reads the bucket and reports the damage (exit 6); it does not vouch for the store with the cache.
func TestLocalDamageVerifyReadsTheBucket(t *testing.T) {
	w, st, c, _, _ := localdamageS3(t, 50, 20000)
	localdamageDamageBucketPack(t, c, st)
	w.expect(6, "integrity", "verify", "--read-data")
}

// localdamageDamageBucketPack inverts one byte in the middle of the bucket's (only) pack.
func localdamageDamageBucketPack(t *testing.T, c *minio.Client, st s3Store) {
	t.Helper()
	ctx := context.Background()
	var key string
	for _, k := range localdamageKeys(t, c, st, "packs") {
		if strings.HasSuffix(k, ".pack") {
			key = k
		}
	}
	o, err := c.GetObject(ctx, st.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(o)
	_ = o.Close()
	if err != nil || len(b) == 0 {
		t.Fatalf("read %s: %v", key, err)
	}
	b[len(b)/2] ^= 0xff
	if _, err := c.PutObject(ctx, st.Bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A damaged pack in the bucket, or one deleted by hand, healed by verify --read-data --repair from
// the workspace's files: the repair exits 0 and the next verify --read-data passes at once, not
// after a gc's grace period.
func TestLocalDamageHealedObjectPassesVerifyAtOnce(t *testing.T) {
	for _, spoil := range []string{"damaged", "deleted"} {
		t.Run(spoil, func(t *testing.T) {
			w, st, c, id, files := localdamageS3(t, 50, 20000)
			if spoil == "damaged" {
				localdamageDamageBucketPack(t, c, st)
			} else {
				for _, k := range localdamageKeys(t, c, st, "packs") {
					if strings.HasSuffix(k, ".pack") {
						if err := c.RemoveObject(context.Background(), st.Bucket, k, minio.RemoveObjectOptions{}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if err := os.RemoveAll(w.state("cache")); err != nil {
				t.Fatal(err)
			}
			var v localdamageVerify
			w.mustJSON(&v, "verify", "--read-data", "--repair")
			if !v.OK || len(v.Healed) == 0 || len(v.Unhealed) > 0 {
				t.Fatalf("verify --repair: ok %v, healed %d, unhealed %v", v.OK, len(v.Healed), v.Unhealed)
			}
			w.mustJSON(&v, "verify", "--read-data")
			if !v.OK {
				t.Fatal("verify after the repair still fails")
			}
			localdamageRollback(t, w, id, files)
		})
	}
}

// A local store: v2 a delta of v1, v3 a delta of v2, the live file v2 again, v1's checkpoint
// deleted, v1's record damaged. The repair stores v2 afresh: v2 and v3 are healed, and only v1,
// which nothing needs, has no intact copy; every checkpoint verifies.
func TestLocalDamageRepairCountsTheHealedDelta(t *testing.T) {
	w := newWorkspace(t, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []string
	for i := range 20000 {
		b := make([]byte, 20)
		for j := range b {
			b[j] = 'a' + byte(rng.IntN(10))
		}
		lines = append(lines, "line "+string(rune('0'+i%10))+" "+string(b))
	}
	v1 := strings.Join(lines, "\n") + "\n"
	v2 := strings.Replace(v1, "\n", "\nCHANGED\n", 1)
	v3 := v2 + "zzz\n"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	w.write("big.txt", v1)
	a := w.checkpoint("A")
	packs, err := filepath.Glob(w.state("objects/packs/*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs after the first checkpoint: %v %v", packs, err)
	}
	w.write("big.txt", v2)
	b := w.checkpoint("B")
	w.write("big.txt", v3)
	c := w.checkpoint("C")
	w.write("big.txt", v2)
	w.must("checkpoint", "delete", a)
	f, err := os.OpenFile(packs[0], os.O_RDWR, 0)
	if err != nil {
		if err = os.Chmod(packs[0], 0o600); err == nil {
			f, err = os.OpenFile(packs[0], os.O_RDWR, 0)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XXXX"), 100000); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	r := w.run("--json", "verify", "--read-data", "--repair")
	var v localdamageVerify
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	slices.Sort(v.Healed)
	want := []string{sum(v2), sum(v3)}
	slices.Sort(want)
	if !slices.Equal(v.Healed, want) || !slices.Equal(v.Unhealed, []string{sum(v1)}) {
		t.Fatalf("repair: healed %v unhealed %v; want healed %v (v2, v3), unhealed only v1 %s", v.Healed, v.Unhealed, want, sum(v1))
	}
	for _, id := range []string{b, c} {
		w.must("verify", "--read-data", id)
	}
}
