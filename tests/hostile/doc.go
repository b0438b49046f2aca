// Package hostile is the standing hostile suite: tests that attack plan from outside, as a user's
// bad day or an adversarial tester would, so that each new capability meets its ways to lose data in
// our own tests first. It has no product code; its tests drive the real binary (built once per test
// binary) against real files, a real SQLite database, and the real MinIO and PostgreSQL servers
// that scripts/servers starts, through fault-injecting TCP proxies where the network must misbehave.
//
// What it attacks, one file per area:
//   - metadata loss: a pack's index, a workspace's records, database rows, an older database, a
//     damaged schema, a copied workspace;
//   - foreign data: another product's files in a bucket or tables in a database;
//   - the network: S3 and PostgreSQL cut mid-body, frozen, refusing, slow (proxy_test.go);
//   - the trackers: directories re-created with the same inode, hard links, writers racing a restore;
//   - secrets: passwords in configuration, history, records, output and messages;
//   - odd input: values and flags that must be refused with the documented exit code;
//   - reading and discovery: a restore into another directory killed mid-copy, a .plan of another
//     user above the directory a command starts in;
//   - embedding: a host's Go-function decisions undone by the CLI byte for byte, one that panics
//     half-way, and the CLI's refusal to re-execute a function only the host has (embed_test.go).
//   - agents: an agent's parallel tool calls hooking at once, a hook killed mid-checkpoint, a
//     session rewound and undone byte-exactly (agents_test.go).
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
package hostile
