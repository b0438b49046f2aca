// Package watch is plan's change-tracking service (`plan watch`) and the side of every command
// that asks it for a snapshot.
//
// The service is one long-lived process per workspace. It keeps the workspace's tracker (the
// in-run tracker of package workspace, Scanner.Track) in force for its whole life. A command that
// needs a snapshot asks it over a Unix socket; the service reads only what the events since its
// last snapshot name, stores the new objects and answers with the root. A command that cannot get
// an answer walks the workspace itself. Watching needs inotify: on other systems the service
// declines to start and commands walk.
//
// Its two invariants:
//   - a snapshot the service answers with is exactly what a full walk taken at the moment of the
//     request would record, and a command trusts the service no more than a walk: any doubt about
//     the answer, and the command walks itself;
//   - the service stores objects only under the workspace lock (the asking command's, or its own),
//     and removes no file but its own socket and a restore's trash under .plan/trash.
//
// Invariants: docs/design.md#watch; the socket's path: docs/format.md#the-watch-services-socket.
package watch
