// Package hostile is the standing hostile suite: tests that attack plan from outside, as a user's
// bad day or an adversarial tester would, so that each new capability meets its ways to lose data in
// our own tests first. It has no product code; its tests drive the real binary against real files,
// a real SQLite database, and the real MinIO and PostgreSQL servers that scripts/servers starts,
// through fault-injecting TCP proxies where the network must misbehave. One file per area attacked
// (the list is in docs/design.md).
//
// The invariant every test here checks, in its own way:
//   - every checkpoint that reported success restores byte-exactly, or plan refuses with a clear
//     error and the documented exit code;
//   - no command deletes the only copy of anything;
//   - no password leaves the process except to the server it is for.
//
// Each test names the finding it guards against; each must fail without the fix it guards. Short
// runs are part of `make check`; PLAN_CRASH_TRIALS (as `make crash` sets it) lengthens the loops of
// the tests that have one.
//
// What it attacks: docs/design.md#testshostile.
package hostile
