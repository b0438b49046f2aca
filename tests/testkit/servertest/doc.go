// Package servertest hands tests the real servers of the shared store: an S3-compatible object
// store (MinIO) and PostgreSQL. scripts/servers starts both on 127.0.0.1 and describes them in
// PLAN_TEST_* environment variables; `make test`, `make bdd` and `make bench` run everything inside
// it. It lives in non-test files so that every package's tests share one copy.
//
// Invariants:
//   - Nothing here stands in for a server: every helper talks to the real one.
//   - Tests share a server, never state on it: S3 names a bucket no other test has, Postgres creates
//     a database for the calling test alone, and both are removed when the test ends, the bucket with
//     every object in it and the database with every session still open on it.
//   - A server's variables all unset means no server: its helper skips the test, unless
//     PLAN_TEST_REQUIRE_SERVERS is set (to anything but "0"), and then fails it, so a run under make
//     can never pass by skipping. Variables set only in part, or set to something unusable, are a
//     mistake and always fail the test.
package servertest
