// Package objectstore keeps plan's content: file contents (blobs) and directory listings (trees),
// content-addressed, zstd-compressed and packed many to a file.
//
// A store reaches its files through the Backend port. Its adapters are Dir, a local directory
// (a workspace's private store under .plan/objects, the default, or a file:// store several
// workspaces share), and the S3 adapter in package bucket. The same code writes and reads packs,
// indexes and records through either; what differs is deletion: a private store is used under its
// workspace's lock and deletes under an intent (gc-pending), a shared store has no lock in common
// with its writers and deletes in two phases under gc marks (see marks.go).
//
// Layout (names relative to the store's root; a shared store keeps records per workspace, under
// records/<workspace id>/, and has gc/ and damaged.d/ instead of gc-pending and damaged):
//
//	packs/<packid>.pack  records: "PLANPACK", u32 version 5, then per object
//	                     kind u8 | hash [32] | rawSize uvarint | compSize uvarint | data |
//	                     crc32c(header bytes) u32 | crc32c(data bytes) u32
//	                     data (compSize bytes) is, by kind:
//	                       1 blob, 2 tree   a zstd frame of the content
//	                       3 tree delta,    base [32] | depth u8 | then either a zstd frame of the
//	                       4 blob delta     content compressed with the base's content as raw
//	                                        dictionary (no dictionary id in the frame), or a patch:
//	                                        "PTP\x01", then operations to the end, each a uvarint v,
//	                                        v>>1 a length > 0: v&1 = 0 copies that many bytes of
//	                                        the base's content from the uvarint offset that
//	                                        follows, v&1 = 1 inserts the bytes that follow
//	                       5 bundled blob   base [32] | depth u8 (1) | offset uvarint: the content
//	                                        is rawSize bytes at offset in the base's (its bundle's)
//	packs/<packid>.idx   "PLANIDX5", u32 count, entries sorted by hash
//	                     (hash [32] | kind u8 | offset u64 | compSize u64 | rawSize u64),
//	                     then the base [32] of each delta entry, in entry order (zero: unknown),
//	                     then the SHA-256 of every preceding byte
//	tmp/                 packs and idx files being written; anything left here after a crash is junk
//	gc-pending           the packs a GC is deleting, one id a line (present only during, or after
//	                     an interrupted, deletion)
//	damaged              "<packid> <hash>" lines: stored copies found damaged, never deduplicated onto
//	records/             the metadata database's committed transactions as immutable records (see
//	                     Records); the database can be rebuilt from them
//	gc/<t>-<r>.json      shared stores: a gc mark, the packs it condemned at store time t
//	damaged.d/<p>-<h>    shared stores: one marker per damaged copy (pack p, object h)
//	gc/summary-…, workspaces/<id>.retired
//	                     shared stores: what gc read of every workspace, and retired workspaces
//	                     (package storeindex owns both; readMarks ignores what is not a mark)
//
// Older packs are read as before; nothing writes them any more. Version 4 packs hold the same
// records, bundled blobs excepted, with a version 3 idx ("PLANIDX3"); version 3 packs hold them
// without patches either (every delta a zstd frame); an idx or a pack of a version before 5 naming a
// bundled blob is damaged, and a plan that predates version 5 refuses a version 5 pack rather than
// misread it. Version 2 packs hold the same
// records (blob deltas excepted) and their idx ("PLANIDX2") does not name delta bases: a reader
// that needs one reads it from the record, once per process. Version 1 packs have no record
// trailers either (their idx starts "PLANIDX1"): they are verified by their content hashes, and GC
// rewrites their live records into current packs. An idx always carries its pack's version. The
// trailer's checksums cover every stored byte of a record, so verify --read-data sees a changed
// byte even where the zstd frame would still decode to the same content.
//
// Integers in headers and idx entries are big-endian; offset is where the record (its kind byte)
// starts. A record's compSize may be written as a padded, ten-byte uvarint: a blob too big to hold in
// memory is compressed straight into its pack, and its compressed size is only known afterwards.
//
// A delta stores a new version of an object in what it changed. A tree delta (Batch.PutTreeDelta)
// is a patch (patch.go): the entries the new listing shares with its base's, found by a merge of
// their names, are copied, the others inserted; one entry of 35 changed takes about 70 bytes,
// instead of the ~1.4 KB the compressed listing takes (every entry holds an incompressible hash),
// and costs no compressor; a patch over a quarter of the listing gives way to a smaller zstd delta. A blob delta is a patch too when the content differs from the base in
// one run of at most 256 bytes (an append, a line edited), and a zstd frame otherwise. A blob delta (Batch.PutBlobDelta, which the
// scanner calls with the content a file had at the previous checkpoint) stores an edit of a file in
// about what the edit adds, as git's deltas and `zstd --patch-from` do. rawSize is the size of the
// content, as for any record; base names the object whose content is the dictionary (or what the
// patch copies from), in any pack,
// itself whole or a delta, of any kind; depth is the number of deltas down to an object stored
// whole (1 when base is stored whole). The idx lists a delta like any object, with its record's
// kind and sizes, and names its base, so that neither Present nor GC reads a record to follow a
// chain.
//
// Checkpoints write one record per object, compressed fast: the hot path. `plan gc --aggressive`
// repacks what is live off it (Repack, repack.go), as git's gc --aggressive does: small whole blobs
// (up to bundleMember, 16 KiB), in git's delta-window order (extension, file name, directory,
// size), are stored in bundles: a bundle is an ordinary blob, stored whole, whose content is
// theirs one after the other (at most bundleTarget, 64 KiB), and each of them is a bundled blob
// record naming it as base, at depth 1. Larger blobs become deltas against the most similar of
// the repackWindow blobs written whole before them when that pays; blob deltas are encoded again
// against the same base; whatever is stored whole is compressed at a strong level. A bundled blob
// is followed, kept, confirmed and checked as a delta is (Kind.delta), so everything below about
// chains holds for it; only GC's re-encoding treats its bundle differently (see reencode.go).
//
// Every process reads the idx files it loads and keeps them as they are: lookups binary-search
// their sorted entries (idxTable), and only what the process registers afterwards goes into a table
// without pointers (objIndex's overlay). Loading checks an idx's layout; the whole file (checksum,
// lengths, every entry's range and order, the delta bases) is checked the first time an object is
// found in it, before that answer is used, and every idx is checked before anything goes through
// all objects or deletes or rewrites packs (gc, consolidation, repack, heal, verify, doctor, stats);
// a miss needs no check, and a read that finds nothing checks them all, so damage is named as such.
// An idx found damaged makes the store faulty (Load reports it): it vouches for nothing and commits
// nothing until a load no longer keeps that idx. Nothing is built per object until a caller goes
// through all of them or looks up more objects than merging the files into one table costs (a walk
// confirms every unchanged file Present): then they are merged once, and that table is the index
// from then on. A refresh keeps the table of every pack it loaded from its idx and finds unchanged
// (same id, same size): an idx in packs/ is immutable, RepairIndexes replaces only one that failed
// its checks, so a command refreshed after another process added a pack reads that pack's idx alone.
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
//     idx is refused (fault.ErrIntegrity naming the file, advising `plan doctor --repair`) rather
//     than silently rebuilt, so damage is seen; RepairIndexes (doctor --repair) replaces it with the
//     idx its pack makes. Nothing advises deleting an idx;
//   - GC MUST NOT delete a pack until every live object it held is durable in another pack. The same
//     object in two packs is harmless: the in-memory index keeps one location;
//   - a zero-length pack or idx is damage, never a valid empty file: an empty batch writes nothing;
//   - decoding never trusts a stored length to size an allocation before checking it against the
//     bytes actually there, and never panics on bad data;
//   - a delta is only a way of storing an object: its name is the SHA-256 of the content rebuilt
//     from its base, checked on every read like any other, and every reader (ReadTree, OpenBlob,
//     CheckObject, Walk, ...) sees the content, never the delta. A missing, damaged or over-long
//     (cyclic) base chain is fault.ErrIntegrity naming the object read. Info reports a delta as
//     the TreeObject or BlobObject it rebuilds to, with Delta set;
//   - chains and memory are bounded: a writer stores an object whole when its base is not Present,
//     unreadable, over maxDeltaObject (8 MiB) or at depth maxDeltaDepth (8), when the object itself
//     is over 8 MiB (a blob that large is streamed into its pack whole), and when the delta does not
//     pay (a tree delta over a sixteenth of the listing and no smaller than the whole compressed
//     tree, a blob delta that saves less than an eighth; a blob of 4 KiB or more that is not a
//     patch is only tried when a quarter of its content-defined samples are found in its base, so
//     a file rewritten from scratch costs a sampling, not a dictionary encode); a reader holds at
//     most two contents of 8 MiB and the chain's frames, and gives up past maxDeltaChain (32)
//     links. When the index has a whole copy and a delta of one object, it uses the whole one;
//   - the trees and small blobs (64 KiB at most) a process stored or decoded (treecache.go, up to
//     8 MiB) serve only as delta bases and as the trees a diff compares, and only while the index
//     locates the object at the record they were cached for (and, for a diff, while it is Present):
//     the depth a new delta records is that record's, and a gc or refresh that moves the object
//     makes the next read follow its chain again; verify, gc and every other reader read records;
//   - a delta never outlives its base: Reachable includes the base chain of every reachable tree
//     and blob, GC keeps the chain of every delta it keeps (live, or dead in a pack it does not
//     rewrite) even if the live set does not name it, and copies records as they are; a batch
//     relies on the base of every delta it writes (shared stores: Confirm checks it Present, down
//     the chain, and copies it out of a condemned pack);
//   - prune frees what it prunes (reencode.go): GC given what the kept roots name (Referenced)
//     first stores again every live delta whose base the live set does not name, against a live
//     base or whole, and MUST commit those copies (pack and idx durable, the index pointing at them;
//     a shared store: before its mark) before it plans any deletion; a pack it may rewrite that holds
//     a dead delta whose base nothing else keeps is rewritten without it rather than keep the base;
//   - a bundle MUST be committed in the same batch as its blobs' records (a repack writes it just
//     before them; consolidation copies both); a read of a bundled blob decodes at most its bundle
//     (bundleTarget) and MUST check the blob's own hash and size, which is what proves the read:
//     the bundle's hash is only computed when the blob's fails, to say whose bytes are damaged
//     (the bundle's, or the blob's record pointing at the wrong ones). A store keeps the contents
//     of the bundles read last (bundleCacheBytes), whose blobs are checked on every read, and
//     never serves them once ReadStoreBytes asks for the store's own bytes;
//   - a repack MUST NOT run on a shared store, nor with a missing pack or a live object known
//     damaged; it MUST commit every new pack (pack and idx durable, the index pointing at the new
//     copies) before it retires the old packs, all of them under one intent, as GC deletes;
//   - GC keeps a bundle while the live blobs read from it hold at least half of its content, and
//     otherwise stores them again (whole, or against their predecessor) before it plans any
//     deletion, as for any re-encoding; a heal retires a damaged bundle no blob is read from any
//     more (each has a copy of its own) with its pack, reported as spent, not as lost;
//   - a delta base an idx names is immutable once its pack is registered; a base read from an older
//     record is remembered per record (pack and offset), never per object, since two copies of one
//     object may have different bases;
//   - the index is loaded without the workspace lock (Open; OpenBackendLazy at the first use that
//     looks an object up, so a command that reads no object reads no idx) and MUST be refreshed by
//     every command once it holds the lock (Refresh), before it reads or writes: another process may
//     have added packs, or a GC removed them, in between. A lock holder that reads no object
//     (a read-only command repairing the database) may Settle instead: the lock holder's chores
//     without reading an index not read yet. Only the lock holder writes an idx, finishes an
//     interrupted GC or clears tmp/. Until a lazy index is read, the methods that return no error
//     see it empty (nothing is Present, so nothing is deduplicated onto); those that return errors
//     report a damaged idx;
//   - a checkpoint MUST NOT reference an object it has not confirmed Present: indexed in a pack that
//     exists and is long enough to hold the record, not listed as damaged, and, for a delta, the same
//     all the way down its base chain. Anything else is stored afresh, and the fresh copy replaces the
//     bad one in the index. A process MAY remember what it confirmed (trustmemo.go: a long-lived
//     process does not follow every unchanged file's chain at each snapshot) only until its view
//     loses something: a pack dropped or read again, a new damage mark, a newly condemned pack
//     MUST empty that memory, after the view changed;
//   - GC deletes a set of packs under a durable intent (gc-pending): written before the first
//     unlink and removed after the last. Every reader skips the packs it names, so a GC killed half
//     way can never leave a delta, whose base it already deleted, in anyone's index; the next lock
//     holder finishes the deletion. GC copies a record only after checking its trailer, so damage is
//     never given a fresh checksum;
//   - a reader that finds its pack gone (a GC rewrote it) re-reads the directory and tries the
//     object's new location once before calling it missing; it never records a vanished pack as
//     damage.
//   - a damage mark names the record whose bytes were found bad, never another: a delta whose base
//     is damaged is intact itself (untrusted until the base is, not marked). A read that failed
//     because the store did not answer (fault.ErrUnavailable: a download cut short, a connection
//     reset) or refused it (fault.ErrDenied) is no verdict on the bytes: it marks nothing and is
//     reported as what it is;
//   - a backend's local copy of a remote store's file (the S3 adapter's cache, see localCopies) is
//     not the store: damage found in one (a record, an idx failing its checksum, a committed
//     record not matching its name) MUST be read again from the store's own bytes before it
//     counts, and only damage found there is marked or reported. ScanPacks, and every read after
//     ReadStoreBytes (verify --read-data), read the store's own bytes; ScanPacks clears the mark of
//     a copy it reads intact, and does not report damage a heal retired (a condemned pack whose
//     object has an intact copy elsewhere) or a delta record superseded by an intact copy.
//
// Shared stores add (see marks.go for the protocol and why it is safe):
//   - every name written is new (packs by random id, records by number and content hash, marks
//     and markers by time and random bits); nothing is read-modify-written in place, so writers of
//     many workspaces and machines need no lock;
//   - a pack is visible only once complete (a rename or a single PUT), and indexed only once its
//     idx is too: a pack without idx is an upload in flight, an orphan or a pack that lost its idx,
//     never deduplicated onto;
//   - gc deletes only provable garbage: a pack MUST have an idx, and every object in it be weighed
//     against the live set, before any mark condemns it or any sweep deletes it. A gc first
//     re-indexes, from their own records, the packs without idx older than its grace period
//     (Reindex; a crashed upload then goes as a pack holding nothing live, a pack whose idx was lost
//     is kept for the records that reference it); a file it cannot re-index (damaged, or not a
//     pack: another product's file) is quarantined: never condemned, never deleted, reported by
//     `plan doctor` (Unindexed). A mark naming a pack without idx (older versions wrote such marks
//     for orphans) deletes nothing;
//   - a pack a gc mark names is condemned: still read, never deduplicated onto (Present is false);
//     a sweep deletes it only if, by a live set computed after the mark was visible, it holds
//     nothing live that has no other copy;
//   - a sweep deletes a pack holding a delta before the pack its base is read from (dependentsFirst):
//     a shared store has no intent readers skip, so a sweep killed half-way must not leave a delta
//     whose base it deleted;
//   - a transaction that references objects makes its record visible, then Confirm checks that
//     every object it relied on is Present, copying what is only in condemned packs; an object
//     already swept fails the transaction (fault.ErrConflict), which never commits;
//   - a shared store's tmp/ is cleaned only of files older than an hour (other workspaces' writers
//     hold no lock we hold).
package objectstore
