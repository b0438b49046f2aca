// Package registry is plan's per-user data directory: where a workspace's state lives outside the
// workspace (so that `git clean -fdx`, `rm -rf .plan` or `rm -rf` of the project cannot take its
// history with it), and the registry of every local workspace.
//
// Layout: <data>/workspaces/<workspace ID>/ holds one workspace's state (database, store, archive,
// logs, journal, lock) and its entry, workspace.json (ID, root, host, the root directory's
// identity), beside a copy of its .plan/config.yaml. One directory per workspace: no file is
// shared by two workspaces, so two plans never contend for one, and a damaged entry costs one.
//
// Invariants:
//   - the data directory and everything plan makes in it is private (0700 directories, 0600
//     files) and owned by the user plan runs as; one that another user owns, or that others may
//     read or write, is refused (fault.ErrConflict) before anything is read from it or written;
//   - an entry is written atomically and durably (fsx.Replace): a crash leaves the old or the new;
//   - a damaged entry is reported, never guessed at or rewritten by a listing.
package registry
