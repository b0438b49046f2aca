// Package agents drives the real coding agents (Claude Code, Codex, Gemini CLI), installed at
// pinned versions from npm by `make e2e-agents`, against scripted model servers on loopback: no
// internet, no real model, HOME a temporary directory. For each agent one test checks that the hooks
// `plan agent install` writes are the ones the agent calls (through a recording command), and one
// that a session run through plan's own hooks is listed by plan sessions and undone byte for byte by
// plan rewind, plan undo and plan revert.
//
// The tests find the binaries in PLAN_E2E_PLAN, PLAN_E2E_CLAUDE, PLAN_E2E_CODEX and
// PLAN_E2E_GEMINI; without them (a plain `go test ./...`) they skip, naming `make e2e-agents`; under
// it (PLAN_E2E_REQUIRE=1) a missing binary fails the test.
//
// The package holds test code only, and the payloads the real agents sent to their hooks, kept in
// testdata/ as evidence of each agent's hook protocol.
package agents
