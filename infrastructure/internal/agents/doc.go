// Package agents installs plan's hooks into the settings of the coding agents people run (Claude
// Code, Codex, Gemini CLI), removes them and reports them.
//
// Every agent keeps its hooks in a JSON file of the same shape: {"hooks": {EVENT: [{"matcher": M,
// "hooks": [{"type": "command", "command": C}]}]}} (Claude Code's .claude/settings.json, Codex's
// .codex/hooks.json, Gemini CLI's .gemini/settings.json). An entry is plan's when its command is
// `BIN hook AGENT EVENT` for the agent and event of the list it sits in; everything else is the
// user's.
//
// Invariants:
//   - Install, then install again, MUST leave the file as the first install did (no second write
//     when nothing changes); uninstall MUST remove plan's entries only, and a matcher group left
//     without hooks, an event left without groups and a "hooks" object left empty by it.
//   - Every key of the file that is not plan's MUST survive, in its order, with its value (numbers
//     keep their literal spelling).
//   - A settings file that is not a JSON object, has a duplicate key, is nested deeper than 200
//     levels, or whose hooks are not of the shape above MUST be refused with fault.Invalid and left
//     byte-identical.
//   - A write MUST be atomic (a temporary file in the same directory, fsynced, renamed over the
//     file, the directory fsynced), keep the file's permission bits, and go through a symbolic link
//     to the file it names rather than replace the link. A write killed before its rename leaves the
//     file whole and a temporary file beside it, which the next successful write removes.
package agents
