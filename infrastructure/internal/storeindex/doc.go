// Package storeindex reads what a shared store's workspaces keep live and what `plan workspaces`
// shows, at a cost that grows with what changed since the last gc rather than with the store's
// whole history, and retires workspaces.
//
// Read lists records/ twice and workspaces/ once; a workspace whose listing matches the last gc
// summary's entry exactly is taken from the summary, any other is read and replayed from the
// records after those the entry covers.
//
// Its two invariants:
//   - a summary is a cache, never a source: an entry is used only for exactly the committed record
//     names it was replayed from, with nothing pending and nothing else changed; a summary is
//     written under a new name before older ones are removed;
//   - a retired workspace keeps live, for gc, its pinned checkpoints and every tree named by a
//     record above the high-water mark its retirement recorded; retiring is one Create of the
//     marker, crash-safe and idempotent.
//
// Invariants and write order: docs/design.md#storeindex;
// byte format: docs/format.md#shared-store-files.
package storeindex
