// Package objectstore keeps plan's content: file contents (blobs) and directory listings (trees),
// content-addressed, zstd-compressed and packed many to a file, and the records every metadata
// database transaction leaves (Records), from which the database can be rebuilt.
//
// A store reaches its files through the Backend port: Dir, a local directory (a workspace's
// private store under .plan/objects, or a file:// store several workspaces share), or the S3
// adapter in package bucket. A private store is used under its workspace's lock and deletes under
// an intent (gc-pending); a shared store has no lock in common with its writers and deletes in two
// phases under gc marks (marks.go). Checkpoints write one record per object, compressed fast;
// `plan gc --aggressive` repacks what is live off the hot path (repack.go).
//
// Its two invariants:
//   - an object is immutable and named by the SHA-256 of its raw content; every read verifies the
//     record against the index and that hash and size, and damage is fault.ErrIntegrity, never
//     returned as content (a delta is only a way of storing an object: readers see the content);
//   - a pack and its idx are durable (fsync'd, renamed out of tmp/ pack first, packs/ fsync'd)
//     before Batch.Commit returns, and no pack is deleted while a live object it holds has no
//     durable copy elsewhere; a checkpoint references only objects it confirmed Present.
//
// The rest (delta chains and their bounds, bundles, idx checking, refresh and locking, damage
// marks, local copies, records, the shared-store gc protocol) is in docs/design.md.
//
// Invariants and write order: docs/design.md#objectstore; byte format: docs/format.md#packs.
package objectstore
