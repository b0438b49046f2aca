// Package application holds plan's use cases and the ports they drive.
//
// The services are thin: CheckpointService, PlanService, CorrectionService, MaintenanceService,
// HistoryService, ReadService, AgentService (and SharedStoreService, for a shared store without a
// workspace, on ports of its own). What they share lives in Operations: recording
// the workspace as a checkpoint, the one rollback (restore, rollback.go), one attempt of a decision
// (attempt.go), and the checkpoints something still needs; each service holds the parts it uses.
// No service reaches into another. `plan correct` enters at CorrectionService.Correct, which runs
// RevertDecisions (the journaled revert step) and then ApplyCorrection (the re-execution).
//
// The guard (internal/kernel, which nothing outside application can import) serialises mutating
// use cases (the workspace lock) and recovers interrupted operations; NewOperations builds it and
// wires all of recovery into it, in one fixed order. The layer knows nothing of gorm, fx,
// urfave/cli or the filesystem layout: adapters in infrastructure implement the ports (port/).
//
// Its two invariants:
//   - every mutating use case runs under the workspace lock and first recovers any operation a
//     crash left behind, and recovery never destroys what it did not record;
//   - a workspace change that spans several files is journaled before the first file is touched,
//     and the journal is removed only after the database agrees with the workspace.
//
// The rest of the services' MUST list (safety checkpoints, units of work, the operation log, Go
// function decisions, undo and redo, prune, resolve, rerun) is in docs/design.md.
//
// Invariants and write order: docs/design.md#application; the journal: docs/format.md#journal.
package application
