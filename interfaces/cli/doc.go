// Package cli is plan's command-line interface (urfave/cli v2); docs/cli.md is its reference.
//
// Invariants:
//   - Run never calls os.Exit and keeps no package state, so it can run many times in one process
//     (the behaviour suite does); all output goes to the Runner's writers;
//   - every failure becomes exactly one exit code through exitCode, from the error's fault kind; with
//     --json the error is one JSON document on stderr, and stdout carries one JSON document on success;
//   - except `plan hook`, which answers in its agent's hook protocol (interfaces/agenthooks): its exit
//     code is the protocol's (0 go on, 2 block a tool call, 1 a wrong invocation), never plan's, and
//     its stdout holds nothing but what the agent reads there;
//   - --json output is built from the view structs (views.go, and interfaces/view for the documents
//     plan mcp also returns), never by marshalling domain types;
//   - rollback, rewind and correction change nothing without consent: --yes, or "y" at the prompt on a
//     terminal (plan mcp passes --yes: its client asks the user, as the tools' destructiveHint tells it);
//   - `plan mcp` is served by interfaces/mcp, which imports this package and runs its tools' commands
//     through a Runner in-process; the command (mcp.go) finds the workspace, then calls Runner.MCP
//     (cmd/plan sets it to mcp.Serve), so nothing here imports the server;
//   - the operation log records the command line with every URL in it stripped of its credentials
//     (secret.Args): the log is shared by a database's workspaces and recorded in the store;
//   - a command the log keeps MUST run its services under one application.Recording (startOp puts
//     it in the context) and write it once when it ends (recordOp), so the services, which log
//     themselves for a host, never log a CLI command twice; every other command runs them
//     Unrecorded;
//   - text output shows a string plan did not write through quote, a message through scrub
//     (quote.go): no control character from a name, command or prompt reaches the terminal.
package cli
