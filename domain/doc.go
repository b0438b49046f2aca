// Package domain holds plan's model: the aggregates (checkpoint, plan, correction), their value
// objects and the repository interfaces they are persisted through.
//
// Invariants that hold for every sub-package:
//   - domain imports nothing but the standard library (enforced by architecture_test.go);
//   - entities have unexported fields, are built by validating constructors and change only through
//     their methods; Rehydrate functions exist for persistence mappers and nothing else;
//   - every error a domain package returns is classified by one of the kinds in package fault, so the
//     interfaces layer can map it to an exit code without looking at message strings.
package domain
