// Package workspace is the adapter between plan and the workspace directory: it lays out .plan/,
// scans the live tree into the object store (Scanner, which can also follow the workspace's changes
// between the snapshots of a run: track.go), restores stored trees (Restorer), keeps the operation
// journal (Journal) and the workspace lock (Locker), and reads the git HEAD (GitHead).
//
// Its two invariants:
//   - a snapshot records exactly what is on disk: a stat cache entry, a reused directory tree or a
//     tracker's events vouch for a file only under the rules docs/design.md names, and whatever
//     they cannot vouch for is read and hashed again; .plan/ and .git/ are never scanned, written
//     or removed, and no symlink is followed;
//   - a restore stages and verifies all new content inside .plan/ before it changes the first
//     workspace path, writes only through an os.Root of the workspace, and puts the source tree
//     back when it fails; the journal is replaced atomically and durably.
//
// Invariants and write order: docs/design.md#workspace; byte formats: docs/format.md#stat-cache,
// docs/format.md#journal.
package workspace
