// Package watch is plan's change-tracking service (`plan watch`) and the side of every command
// that asks it for a snapshot.
//
// The service is one long-lived process per workspace. It keeps the workspace's tracker (the
// in-run tracker of package workspace, Scanner.Track) in force for its whole life: the tree of
// the last snapshot in memory and an inotify watch on every directory. A command that needs a
// snapshot (checkpoint create, a rollback's safety checkpoint, a hook's pre_decision checkpoint)
// asks it over a Unix socket; the service brings its tree up to date with what the events since
// its last snapshot name, reads only that, stores the new objects and answers with the root. A
// command that cannot get an answer walks the workspace itself, as it does without the service.
//
// Invariants:
//   - a snapshot the service answers with is exactly what a full walk taken at the moment of the
//     request would record: the tracker's own rule (whatever its events cannot vouch for is read
//     again; overflow, unwatchable directories, changed ignore rules and directories not where the
//     tree says make it walk), and the service's store view is refreshed before every snapshot so
//     that nothing a gc removed is taken as present;
//   - a command trusts the service no more than a walk: no socket, a connection refused, a peer
//     that is not the same user, an answer that is not well-formed, for another workspace, or not
//     begun within the connect deadline, a silence between keep-alives longer than the idle
//     deadline, or the connection closed before the answer, and the command walks itself;
//   - the command's own view of the store holds every object of the tree it is answered with: it
//     is refreshed after an answer that stored anything, or that names a tree the view does not
//     hold (an answer that stored nothing, of a tree the view holds, is what the view already
//     reads: the lock the command holds keeps every other writer out);
//   - the service stores objects only under the workspace lock: the lock of the command that asks
//     (which holds it while it waits for the answer), or the service's own for its first walk and
//     for the comparison before a periodic or idle checkpoint; a store's writers clean up after
//     one another on the assumption that only the lock's holder writes;
//   - one service per workspace: a second one refuses to start while the first answers; a socket
//     file nobody answers on is removed by the next service (or `plan watch stop`), and any other
//     file at the socket's path is never removed;
//   - the socket lives in .plan/ (watch.sock); when that path is longer than a Unix socket address
//     can hold, under a directory of the temporary directory owned by the user and closed to others
//     (plan-UID/), named after a hash of the workspace's .plan path;
//   - a restore's word (opPlaced: the files it renamed into place from .plan/staging) is taken only
//     for a file that, once the events queued until then are read, still has the inode the restore
//     placed and no other name, and that no event but its arrival named since the last snapshot
//     (workspace.Scanner.Vouch); it only spares the next snapshot the stat of every file that an
//     arrival from an unwatched directory, changed and removed, would cost, and never marks
//     anything as unchanged;
//   - the only files the service removes (besides its own socket) are a restore's trash: a directory
//     a request names that lies directly under the workspace's .plan/trash, after the answer;
//   - the service's periodic and idle checkpoints go through the same checkpoint use case as
//     `plan checkpoint create` (under the workspace lock) and are skipped when the workspace
//     is what the newest checkpoint holds.
//
// Watching needs inotify: on other systems the service declines to start and commands walk.
package watch
