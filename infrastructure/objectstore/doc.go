// Package objectstore keeps plan's content: file contents (blobs) and directory listings (trees),
// content-addressed, zstd-compressed and packed many to a file, under <workspace>/.plan/objects.
//
// Layout:
//
//	packs/<packid>.pack  records: "PLANPACK", u32 version 1, then per object
//	                     kind u8 | hash [32] | rawSize uvarint | compSize uvarint | zstd frame
//	packs/<packid>.idx   "PLANIDX1", u32 count, entries sorted by hash
//	                     (hash [32] | kind u8 | offset u64 | compSize u64 | rawSize u64),
//	                     then the SHA-256 of every preceding byte
//	tmp/                 packs and idx files being written; anything left here after a crash is junk
//
// Integers in headers and idx entries are big-endian; offset is where the record (its kind byte)
// starts. A record's compSize may be written as a padded, ten-byte uvarint: a blob too big to hold in
// memory is compressed straight into its pack, and its compressed size is only known afterwards.
//
// Invariants:
//   - an object is immutable and named by the SHA-256 of its raw (uncompressed) content. The kind is a
//     hint, not part of the name: a file whose bytes happen to equal a tree encoding is the same object;
//   - a pack and its idx MUST be durable (file fsync'd, then renamed out of tmp/, pack first and idx
//     second, then packs/ fsync'd) before Batch.Commit returns; only then are its objects visible, so a
//     checkpoint that references them never points at data a crash could lose;
//   - every read MUST verify the record header against the index and the SHA-256 and size of the
//     decompressed bytes; damage is reported as fault.ErrIntegrity, never returned as content;
//   - a pack is self-describing: a pack whose idx is missing is re-indexed by scanning it. A corrupt
//     idx is refused (fault.ErrIntegrity naming the file) rather than silently rebuilt, so damage is seen;
//   - GC MUST NOT delete a pack until every live object it held is durable in another pack. The same
//     object in two packs is harmless: the in-memory index keeps one location;
//   - a zero-length pack or idx is damage, never a valid empty file: an empty batch writes nothing;
//   - decoding never trusts a stored length to size an allocation before checking it against the
//     bytes actually there, and never panics on bad data.
package objectstore
