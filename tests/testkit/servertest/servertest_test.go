package servertest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/planhq/plan/tests/testkit/servertest"
)

// TestS3 round-trips an object through the real server: a bucket made in the region, an object
// larger than one read buffer PUT and read back byte for byte.
func TestS3(t *testing.T) {
	env := servertest.S3(t)
	ctx := t.Context()
	client := env.Client(t)
	if err := client.MakeBucket(ctx, env.Bucket, minio.MakeBucketOptions{Region: env.Region}); err != nil {
		t.Fatalf("MakeBucket %s: %v", env.Bucket, err)
	}
	want := make([]byte, 3<<20+17)
	_, _ = rand.Read(want)
	const key = "packs/ab/cdef.pack"
	if _, err := client.PutObject(ctx, env.Bucket, key, bytes.NewReader(want), int64(len(want)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	obj, err := client.GetObject(ctx, env.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("reading the object back: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("object read back differs: %d bytes, want %d", len(got), len(want))
	}
	if _, err := client.StatObject(ctx, env.Bucket, "packs/absent", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Fatalf("StatObject of an absent key: %v, want NoSuchKey", err)
	}
}

// TestS3Cleanup: every call names a new bucket, and the cleanup removes a bucket that holds objects
// (nested keys and an unfinished multipart upload's parts are removed too: MinIO's force delete).
func TestS3Cleanup(t *testing.T) {
	outer := servertest.S3(t) // never created: its cleanup must cope with that
	client := outer.Client(t)
	var inner servertest.S3Env
	if !t.Run("use", func(t *testing.T) {
		inner = servertest.S3(t)
		if inner.Bucket == outer.Bucket {
			t.Fatalf("two calls named the same bucket %s", inner.Bucket)
		}
		ctx := t.Context()
		if err := client.MakeBucket(ctx, inner.Bucket, minio.MakeBucketOptions{Region: inner.Region}); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"a", "dir/b", "dir/sub/c"} {
			if _, err := client.PutObject(ctx, inner.Bucket, key, strings.NewReader(key), int64(len(key)), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}) {
		return
	}
	exists, err := client.BucketExists(t.Context(), inner.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("bucket %s still exists after its test ended", inner.Bucket)
	}
}

// TestPostgres connects with pgx to the database made for the test, which is not the maintenance
// database, is empty, and lets the test create tables.
func TestPostgres(t *testing.T) {
	dsn := servertest.Postgres(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", redact(dsn), err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	var db string
	var tables int
	if err := conn.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')").Scan(&db, &tables); err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(dsn); db != strings.TrimPrefix(u.Path, "/") || db == "postgres" || tables != 0 {
		t.Fatalf("connected to database %q with %d tables; want the fresh, empty one of %s", db, tables, redact(dsn))
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (k text PRIMARY KEY); INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatalf("creating a table in the test's database: %v", err)
	}
	var k string
	if err := conn.QueryRow(ctx, "SELECT k FROM t").Scan(&k); err != nil || k != "x" {
		t.Fatalf("SELECT k = %q, %v", k, err)
	}
}

// TestPostgresCleanup: each call makes its own database, and the cleanup drops it even while the test
// left a session open on it.
func TestPostgresCleanup(t *testing.T) {
	other := servertest.Postgres(t)
	var dsn string
	var leaked *pgx.Conn
	if !t.Run("use", func(t *testing.T) {
		dsn = servertest.Postgres(t)
		if dsn == other {
			t.Fatalf("two calls returned the same database %s", redact(dsn))
		}
		var err error
		if leaked, err = pgx.Connect(t.Context(), dsn); err != nil {
			t.Fatal(err)
		}
	}) {
		return
	}
	defer leaked.Close(context.Background())
	admin, err := pgx.Connect(t.Context(), os.Getenv(servertest.EnvPostgresDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	u, _ := url.Parse(dsn)
	var n int
	if err := admin.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", strings.TrimPrefix(u.Path, "/")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database of %s still exists after its test ended", redact(dsn))
	}
	if err := leaked.Ping(t.Context()); err == nil {
		t.Fatal("the session left open on the dropped database still answers")
	}
}

// TestMissingServers runs TestS3 and TestPostgres again in a child process with the environment
// changed, and checks what the real testing package reports: skipped without servers, failed when
// servers are required, and failed when the configuration is wrong rather than absent.
func TestMissingServers(t *testing.T) {
	cases := []struct {
		name   string
		env    []string
		fail   bool     // the child exits non-zero
		report []string // lines the child's -test.v output must hold
	}{
		{"unset", nil, false, []string{"--- SKIP: TestS3 ", "--- SKIP: TestPostgres "}},
		{"unset, required", []string{servertest.EnvRequireServers + "=1"}, true,
			[]string{"--- FAIL: TestS3 ", "--- FAIL: TestPostgres ", servertest.EnvS3Endpoint, servertest.EnvPostgresDSN}},
		{"unset, required=0", []string{servertest.EnvRequireServers + "=0"}, false, []string{"--- SKIP: TestS3 ", "--- SKIP: TestPostgres "}},
		{"S3 in part", []string{servertest.EnvS3Endpoint + "=http://127.0.0.1:1"}, true,
			[]string{"--- FAIL: TestS3 ", "--- SKIP: TestPostgres ", servertest.EnvS3SecretKey}},
		{"S3 endpoint without scheme", []string{
			servertest.EnvS3Endpoint + "=127.0.0.1:9000", servertest.EnvS3AccessKey + "=k",
			servertest.EnvS3SecretKey + "=s", servertest.EnvS3Region + "=us-east-1",
		}, true, []string{"--- FAIL: TestS3 ", "is not an http(s)://host:port URL"}},
		{"DSN not a URL", []string{servertest.EnvPostgresDSN + "=host=127.0.0.1 user=x"}, true,
			[]string{"--- FAIL: TestPostgres ", "is not a postgres://"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^(TestS3|TestPostgres)$", "-test.v", "-test.count=1")
			cmd.Env = append(withoutServers(), c.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("running the child: %v", err)
			}
			if failed := err != nil; failed != c.fail {
				t.Errorf("child failed = %v, want %v", failed, c.fail)
			}
			for _, r := range c.report {
				if !strings.Contains(string(out), r) {
					t.Errorf("child output lacks %q", r)
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", out)
			}
		})
	}
}

// withoutServers is this process's environment minus every PLAN_TEST_ variable.
func withoutServers() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLAN_TEST_") {
			env = append(env, kv)
		}
	}
	return env
}

// redact hides the password of a DSN in failure messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return u.Redacted()
}
