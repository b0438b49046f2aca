// Package features is plan's behaviour suite: Gherkin scenarios (*.feature) and the step definitions
// that drive the plan CLI through them, run by godog under `go test ./features/...`.
//
// Invariants the harness keeps, so a green run means what it says:
//   - every scenario starts from nothing: a fresh temporary directory holding its workspace, an
//     "outside" directory for escape checks and a "plans" directory for plan files (outside the
//     workspace, so they are not among what decisions change), removed afterwards even when files
//     were made immutable, after killing any process left running in it (the decision of a plan the
//     scenario killed);
//   - commands run in-process through cli.Runner by default and, when PLAN_BINARY names a binary,
//     through that binary with the workspace as its working directory; scenarios that need a real
//     process (crashes injected with PLAN_FAILPOINT, a plan killed with SIGKILL mid-run, a terminal on
//     stdin) always use a binary, built once per run when PLAN_BINARY is unset;
//   - a command that exits non-zero MUST be followed by a step that asserts its exit code, or the
//     scenario fails: a failure nobody looked at never passes silently;
//   - "the workspace equals" compares every path's type, permission bits, content hash and link
//     target exactly, ignoring only .plan/ and .git/ at the root, as the contract does.
package features
