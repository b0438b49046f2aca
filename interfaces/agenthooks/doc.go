// Package agenthooks speaks the hook protocols of the AI coding agents plan records: Claude Code,
// OpenAI Codex CLI and Gemini CLI. Parse turns one hook invocation (the agent, its event name and
// the JSON payload it wrote on stdin) into an Event plan acts on; Allow, Warn and Block render the
// answer the agent's protocol expects (stdout, stderr, exit code).
//
// Invariants:
//   - Parse never guesses: an unknown agent or event, a payload that is not a JSON object, one
//     for another event, or one missing what its action needs (the session, the tool, the
//     tool-call ID) is an error, and the caller records nothing;
//   - only mutating tools are actions (Claude Code's Edit, Write, MultiEdit, NotebookEdit and
//     Bash; Codex's Bash and apply_patch; Gemini CLI's write_file, replace and run_shell_command);
//     every other tool is Ignore, so read-only calls cost nothing;
//   - a reply writes to stdout only what the protocol reads there (nothing, or one JSON object);
//     messages for the user go to stderr or the protocol's systemMessage;
//   - only a tool's pre event can block (exit 2, the reason on stderr, in all three protocols);
//     any other failure is exit 0 with a warning, or 1 (the protocols' non-blocking error) when
//     the invocation itself is wrong.
package agenthooks
