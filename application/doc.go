// Package application holds plan's use cases: CheckpointService (checkpoints, diff, rollback),
// RecoveryService (finishing or undoing an interrupted operation), and the ports they drive.
//
// The layer knows nothing of gorm, fx, urfave/cli or the filesystem layout; adapters in
// infrastructure implement the ports. Invariants the services keep:
//   - every mutating use case runs under the workspace lock (Locker) and first recovers any operation
//     a crash left behind (Recover), so no command ever acts on a half-applied workspace;
//   - a rollback records the current state as a pre_rollback checkpoint before it touches anything, so
//     nothing it removes is lost;
//   - a workspace change that spans several files is journaled (Journal) before the first file is
//     touched and the journal is removed only after the database agrees with the workspace;
//   - database changes that belong together (a rollback's count, reverted decisions and history) are
//     committed in one unit of work (Transactor).
package application
