// Package storeindex reads what a shared store's workspaces keep live and what `plan workspaces`
// shows, at a cost that grows with what changed since the last gc rather than with the store's
// whole history, and retires workspaces.
//
// Layout (inside the shared store, beside what package objectstore documents):
//
//	workspaces/<id>.retired                  the workspace was retired (`plan workspaces retire`):
//	                                         JSON {format, workspace_id, retired_at, host, head},
//	                                         written once, never changed
//	gc/summary-<ms>-<sha256>.json            a summary a gc wrote: per workspace, the state its
//	                                         records replay to and the names it was replayed from;
//	                                         ms is the store's time in hex milliseconds, sha256 the
//	                                         hex SHA-256 of the file's bytes
//
// Reading the store (Read) takes two listings of records/ (pending names from the first,
// committed from the second: a record committed between them is seen in one of the two) and one
// of workspaces/, in one request per thousand names on S3 (ReadForListing, for `plan workspaces`,
// lists records/ once: a listing may miss a transaction in flight, a gc may not). A workspace whose listing matches the
// summary's entry exactly is taken from the summary without reading any of its files; any other
// is read as a gc always read it (its high-water mark, pending and committed records, the hole
// check), replaying only the records after those its summary entry covers.
//
// Invariants:
//   - a summary is a cache, never a source: an entry is used only for exactly the committed record
//     names it was replayed from (their count and a SHA-256 over them), with no record pending, the
//     high-water mark unchanged (the same ETag, or the same number read) and the descriptor and
//     retirement unchanged (the same ETag, or read again). A summary whose bytes do not match its
//     name, that does not parse, or is of another format is ignored, and every workspace is read;
//   - a summary is written under a new name (Create), then older ones are removed: a kill at any
//     point leaves one or more whole summaries, the newest of which is read, or none;
//   - an entry is written only for a workspace whose history has no hole: a workspace with a hole
//     is read (and refused by gc) every time;
//   - a retired workspace keeps live, for gc, the roots of its pinned checkpoints and every tree
//     named by a record numbered above the high-water mark its retirement recorded (a command that
//     opened the workspace before it was retired may still commit), and its pending records' trees
//     like any workspace's; everything else it held goes once no other workspace keeps it. Its
//     records stay: a hole in them stops every gc, as for any workspace;
//   - retiring is one Create of the marker: crash-safe, and idempotent (an existing marker is the
//     retirement, reported as already done).
package storeindex
