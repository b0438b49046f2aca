// Package application holds plan's use cases and the ports they drive.
//
// The services are thin: CheckpointService (create, list, show, delete, diff, rollback), PlanService
// (run, exec, status, log), CorrectionService (RevertDecisions, ApplyCorrection, RevertDecision — the
// surgical revert of one decision, merged with what changed since —, list, show) and
// MaintenanceService (prune, gc, verify, stats). What they share lives in one place, Operations:
// recording the workspace as a checkpoint, the journaled rollback against a backup checkpoint and
// its recording, running one attempt of a decision, and the checkpoints something still needs. No
// service reaches into another. The correction flow starts at CorrectionService.RevertDecisions.
//
// Guard serialises mutating use cases (the workspace lock) and recovers interrupted operations.
// NewOperations wires all of recovery into it, in one fixed order, so any graph that builds a
// service has all of it.
//
// AgentService records AI coding agents' sessions from their hooks in the same model: a session
// is a plan, a tool call a decision of kind plan.Outside (recorded, never run: a correction that
// would re-execute one is refused), a prompt opens a turn. A hook MUST read and write only the
// session's row and the tool call it concerns (plan.Repository.Partial), never the whole session,
// so a call costs the same at any point of a long session.
//
// The layer knows nothing of gorm, fx, urfave/cli or the filesystem layout; adapters in
// infrastructure implement the ports. Invariants the services keep:
//   - every mutating use case runs under the workspace lock and first recovers any operation a crash
//     left behind, so no command ever acts on a half-applied workspace; read-only use cases never
//     recover (recovery changes the workspace): they report the pending operation;
//   - recovery never destroys what it did not record: work found in neither tree of the interrupted
//     operation is recorded as a pre_recover checkpoint before the workspace is touched;
//   - a rollback records the current state as a pre_rollback checkpoint before it touches anything, so
//     nothing it removes is lost;
//   - a workspace change that spans several files is journaled (Journal) before the first file is
//     touched and the journal is removed only after the database agrees with the workspace; a
//     failed change is undone (the journal turned Backward) unless it was asked never to be
//     (RollbackRequest.NeverUndo, a clone's materialisation into an empty directory): that one
//     keeps its Forward journal, which recovery finishes;
//   - under on_failure rollback, a decision never runs again on top of an attempt that was
//     interrupted: that attempt is first rolled back to its own pre_decision checkpoint;
//   - database changes that belong together (a rollback's count, reverted decisions and history) are
//     committed in one unit of work (Transactor).
package application
