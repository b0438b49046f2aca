package application

import "github.com/planhq/plan/domain/correction"

// Planning a surgical revert is the domain's (correction.PlanRevert); these are its names as the
// callers of RevertDecision know them.

// RevertAction is what a surgical revert does, or would do, to one path the decision changed.
type RevertAction = correction.RevertAction

// The actions (see correction.RevertRestore and the others).
const (
	RevertRestore  = correction.RevertRestore
	RevertMerge    = correction.RevertMerge
	RevertKeep     = correction.RevertKeep
	RevertConflict = correction.RevertConflict
)

// RevertPath is the plan for one path.
type RevertPath = correction.RevertPath
