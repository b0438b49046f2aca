// Package agente2e drives the real coding agents (Claude Code, Codex, Gemini CLI), installed at pinned versions
// from npm by `make e2e-agents`, against a scripted model server on loopback: no internet, no real
// model, HOME a temporary directory. The tests find the binaries in PLAN_E2E_PLAN and
// PLAN_E2E_CLAUDE, PLAN_E2E_CODEX, PLAN_E2E_GEMINI; without them (a plain `go test ./...`) they skip, naming `make e2e-agents`; under it
// (PLAN_E2E_REQUIRE=1) a missing binary fails the test.
//
// The package holds test code only, and the payloads the real agents sent to their hooks, kept in
// testdata/ as evidence of each agent's hook protocol.
package agente2e
