// Package kernel is what every mutating use case of package application stands on: the Guard,
// which serialises them under the workspace lock, recovers an operation a crash interrupted before
// any of them runs, and performs the journaled change (Change), whose finisher's transaction is the
// commit point of every rollback, correction and revert.
//
// It is internal to application: the CLI, the adapters and host programs reach it only through
// the use cases (MaintenanceService's Recover, RecoverIfIdle, Interrupted, OnRecover and Heal).
//
// Invariants (docs/design.md#application):
//   - recovery never destroys what it did not record: work found in neither the source nor the
//     target tree is recorded as a pre_recover checkpoint first;
//   - a change is journaled before its first file is touched, and the journal is removed only after
//     the finisher committed; a failure before that puts the source tree back.
package kernel
