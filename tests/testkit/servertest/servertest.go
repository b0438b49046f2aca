package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The environment scripts/servers exports.
const (
	EnvS3Endpoint     = "PLAN_TEST_S3_ENDPOINT" // http://127.0.0.1:port
	EnvS3AccessKey    = "PLAN_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey    = "PLAN_TEST_S3_SECRET_KEY" // #nosec G101 -- a variable's name, not a credential
	EnvS3Region       = "PLAN_TEST_S3_REGION"
	EnvPostgresDSN    = "PLAN_TEST_POSTGRES_DSN" // postgres://superuser:password@127.0.0.1:port/postgres?…
	EnvRequireServers = "PLAN_TEST_REQUIRE_SERVERS"
)

// timeout bounds each call to a server, so a hung server fails a test instead of stalling the run.
const timeout = time.Minute

// S3Env is where a test's objects go: the server, its credentials, and a bucket of the test's own.
type S3Env struct {
	Endpoint  string // URL with scheme, as a store would be configured: http://127.0.0.1:port
	AccessKey string
	SecretKey string
	Region    string
	// Bucket is unique to the test and does not exist yet: creating it is left to the code under
	// test. It is removed at cleanup with every object in it, if it was created.
	Bucket string
}

// S3 returns the S3 server's coordinates and a fresh bucket name for t, skipping t when no server is
// configured (failing it under PLAN_TEST_REQUIRE_SERVERS).
func S3(t testing.TB) S3Env {
	t.Helper()
	v := lookup(t, "S3 (MinIO)", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey, EnvS3Region)
	env := S3Env{Endpoint: v[0], AccessKey: v[1], SecretKey: v[2], Region: v[3], Bucket: "plan-test-" + randomHex()}
	client := env.Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		exists, err := client.BucketExists(ctx, env.Bucket)
		if err != nil {
			t.Errorf("servertest: cleanup: bucket %s: %v", env.Bucket, err)
			return
		}
		if !exists {
			return
		}
		// MinIO's force delete removes the objects, their versions and unfinished uploads with the
		// bucket, in one request.
		if err := client.RemoveBucketWithOptions(ctx, env.Bucket, minio.RemoveBucketOptions{ForceDelete: true}); err != nil {
			t.Errorf("servertest: cleanup: removing bucket %s: %v", env.Bucket, err)
		}
	})
	return env
}

// Client returns a minio-go client for the server, for tests that look at or tamper with what is
// stored behind the code under test.
func (e S3Env) Client(t testing.TB) *minio.Client {
	t.Helper()
	u, err := url.Parse(e.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		t.Fatalf("servertest: %s=%q is not an http(s)://host:port URL", EnvS3Endpoint, e.Endpoint)
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(e.AccessKey, e.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: e.Region,
	})
	if err != nil {
		t.Fatalf("servertest: S3 client for %s: %v", e.Endpoint, err)
	}
	return client
}

// Postgres creates a database for t alone and returns a DSN to it (as the superuser of
// PLAN_TEST_POSTGRES_DSN, so the code under test may create anything in it). The database is
// dropped at cleanup (after the cleanups registered later, such as closing the code under test),
// ending any session still open on it.
// It skips t when no server is configured (fails it under PLAN_TEST_REQUIRE_SERVERS).
func Postgres(t testing.TB) string {
	t.Helper()
	admin := lookup(t, "PostgreSQL", EnvPostgresDSN)[0]
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		t.Fatalf("servertest: %s is not a postgres://user:password@host:port/database URL", EnvPostgresDSN)
	}
	name := "plan_test_" + randomHex()
	ident := pgx.Identifier{name}.Sanitize()
	if err := adminExec(admin, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("servertest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// FORCE: a test that failed halfway may leave a connection open, which would block the drop.
		if err := adminExec(admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("servertest: cleanup: dropping database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// Exec runs stmts on the database of dsn, one after the other on one connection, failing t at the
// first that fails. Each is sent as a simple query, so one may hold several statements separated
// by semicolons (run as one implicit transaction) and none takes parameters.
func Exec(t testing.TB, dsn string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("servertest: connecting to run %q: %v", stmts, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for _, s := range stmts {
		if _, err := conn.PgConn().Exec(ctx, s).ReadAll(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// adminExec runs one statement on the server's maintenance database. CREATE and DROP DATABASE take
// no parameters, so the statement carries its identifier, quoted by pgx.Identifier.
func adminExec(dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(ctx, stmt)
	return err
}

// lookup returns the values of the named variables, or ends t: skipped when none is set (failed
// under PLAN_TEST_REQUIRE_SERVERS), failed when only some are.
func lookup(t testing.TB, server string, names ...string) []string {
	t.Helper()
	values := make([]string, len(names))
	var missing []string
	for i, n := range names {
		if values[i] = os.Getenv(n); values[i] == "" {
			missing = append(missing, n)
		}
	}
	switch {
	case len(missing) == 0:
		return values
	case len(missing) < len(names):
		t.Fatalf("servertest: %s is configured only in part: %s unset", server, strings.Join(missing, ", "))
	case required():
		t.Fatalf("servertest: %s is set but %s is unset: run the tests through `make test`, or "+
			"`scripts/servers run -- go test …`, which start the servers", EnvRequireServers, strings.Join(missing, ", "))
	default:
		t.Skipf("servertest: no %s server (%s unset); `make test` or `scripts/servers run -- go test …` starts one",
			server, strings.Join(missing, ", "))
	}
	return nil // unreachable: Fatalf and Skipf end the test's goroutine
}

func required() bool {
	v := os.Getenv(EnvRequireServers)
	return v != "" && v != "0"
}

// randomHex is 16 hex digits from crypto/rand: valid in a bucket name and a bare SQL identifier, and
// unique across the tests of every concurrent run sharing a server.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}
