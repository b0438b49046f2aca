Feature: plan mcp, the way back for an AI agent
  `plan mcp` is an MCP server on stdio. Its tools (checkpoint, list, diff, restore, revert, undo,
  status) run the commands of the same name on the workspace it was started in, with their locks,
  names, operation log and JSON output; a refusal is a tool error carrying plan's error kind and exit
  code. These scenarios speak JSON-RPC to the real binary over its stdin and stdout.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "hello\n"
    And a file "src/main.go" containing "package main\n"
    And an executable file "bin/run.sh" containing "#!/bin/sh\necho run\n"
    And a symlink "link" pointing to "a.txt"

  Scenario: the tools and their hints
    When I list the MCP tools
    Then the MCP tools are exactly "checkpoint diff list restore revert rewind sessions status undo"
    And the MCP tool "checkpoint" is additive
    And the MCP tool "list" is read-only
    And the MCP tool "diff" is read-only
    And the MCP tool "status" is read-only
    And the MCP tool "restore" is destructive
    And the MCP tool "revert" is destructive
    And the MCP tool "undo" is destructive
    And the MCP tool "sessions" is read-only
    And the MCP tool "rewind" is destructive

  Scenario: an agent checkpoints, a command wipes a directory, restore brings back every byte and undo reverses it
    When I call the MCP tool "checkpoint" with:
      """
      {"note": "before the refactor", "labels": {"agent": "claude", "turn": "3"}}
      """
    Then it succeeds
    And the JSON output has "note" equal to "before the refactor"
    And the JSON output has "labels.agent" equal to "claude"
    And I remember the JSON output "id" as "before"
    And I remember the workspace as "before"
    When I delete "src"
    And I change "a.txt" to "broken\n"
    And I change the mode of "bin/run.sh" to "0644"
    And a file "stray.txt" containing "stray\n"
    And I remember the workspace as "broken"
    And I call the MCP tool "restore" with:
      """
      {"checkpoint": "<before>"}
      """
    Then it succeeds
    And the JSON output has "checkpoint_id" equal to "<before>"
    And the JSON output has "dry_run" equal to "false"
    And the workspace equals "before"
    When I call the MCP tool "undo"
    Then it succeeds
    And the JSON output has "undone.kind" equal to "rollback"
    And the workspace equals "broken"
    When I run "plan --json history"
    Then it succeeds
    And the JSON output has "0.kind" equal to "undo"
    And the JSON output has "1.kind" equal to "rollback"

  Scenario: a dry run and a per-path restore
    Given a checkpoint "base"
    When I change "a.txt" to "edited\n"
    And I delete "src/main.go"
    And I remember the workspace as "edited"
    And I call the MCP tool "restore" with:
      """
      {"checkpoint": "@", "dry_run": true}
      """
    Then it succeeds
    And the JSON output has "dry_run" equal to "true"
    And the JSON output has "modified" equal to "1"
    And the JSON output has "deleted" equal to "0"
    And the JSON output has "added" equal to "1"
    And the workspace equals "edited"
    When I call the MCP tool "restore" with:
      """
      {"checkpoint": "<base>", "paths": ["src"]}
      """
    Then it succeeds
    And the file "src/main.go" contains "package main\n"
    And the file "a.txt" contains "edited\n"

  Scenario: list, diff and status
    Given a checkpoint "one"
    When I call the MCP tool "checkpoint" with:
      """
      {"labels": {"agent": "codex"}}
      """
    Then it succeeds
    When I change "a.txt" to "hello\nworld\n"
    And I call the MCP tool "list" with:
      """
      {"limit": 1}
      """
    Then it succeeds
    And the JSON output has 1 "checkpoints"
    And the JSON output has "checkpoints.0.labels.agent" equal to "codex"
    When I call the MCP tool "list" with:
      """
      {"labels": {"agent": "nobody"}}
      """
    Then it succeeds
    And the JSON output has 0 "checkpoints"
    When I call the MCP tool "diff" with:
      """
      {"from": "<one>", "stat": true, "patch": true}
      """
    Then it succeeds
    And the JSON output has "changes.0.path" equal to "a.txt"
    And the JSON output has "stat.insertions" equal to "1"
    And the JSON output has "changes.0.patch" containing "+world"
    When I call the MCP tool "diff" with:
      """
      {"from": "@", "name_only": true}
      """
    Then it succeeds
    And stderr contains "a.txt"
    When I call the MCP tool "status"
    Then it succeeds
    And the JSON output has "workspace.changes.modified" equal to "1"

  Scenario: revert one decision through MCP and keep the later one
    When I run "plan exec --id first -- sh -c 'echo 1 > first.txt'"
    And I run "plan exec --id second -- sh -c 'echo 2 > second.txt'"
    And I call the MCP tool "revert" with:
      """
      {"decision": "first", "reason": "the agent wrote the wrong file"}
      """
    Then it succeeds
    And the JSON output has "decision_id" equal to "first"
    And "first.txt" does not exist
    And the file "second.txt" contains "2\n"

  Scenario: the sessions the hooks recorded, and a rewind to before the agent's rm -rf, byte for byte
    Given a file "build/a.o" containing "object"
    And the agent "claude" sends "UserPromptSubmit" from "claude-UserPromptSubmit"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Write"
    And a file "README.md" containing "# Project"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Write"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And I remember the workspace as "before rm"
    And I delete "build"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    And the agent "claude" sends "Stop" from "claude-Stop"
    And I remember the workspace as "after rm"
    When I call the MCP tool "sessions"
    Then it succeeds
    And the JSON output has "sessions.0.plan" equal to "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"
    And the JSON output has "sessions.0.turns.0.tool_calls.1.summary" equal to "Bash: rm -rf build"
    And the JSON output has "sessions.0.turns.0.tool_calls.1.files.0.path" equal to "build/a.o"
    When I call the MCP tool "rewind" with:
      """
      {"session": "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12", "tool_call": "toolu_01Q2pZr8VbN5mKc3tYxE7wJd"}
      """
    Then it succeeds
    And the JSON output has "tool_call" equal to "toolu_01Q2pZr8VbN5mKc3tYxE7wJd"
    And the workspace equals "before rm"
    When I call the MCP tool "undo"
    Then it succeeds
    And the workspace equals "after rm"
    When I call the MCP tool "rewind" with:
      """
      {"session": "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12", "turn": 9}
      """
    Then the exit code is 4
    And the JSON error has "error.kind" equal to "not_found"
    And the workspace equals "after rm"

  Scenario Outline: a bad call is a tool error with plan's kind, and changes nothing
    Given a checkpoint "base"
    And I change "a.txt" to "changed\n"
    And I remember the workspace as "changed"
    When I call the MCP tool "<tool>" with:
      """
      <arguments>
      """
    Then the exit code is <code>
    And the JSON error has "error.kind" equal to "<kind>"
    And the workspace equals "changed"

    Examples:
      | tool       | arguments                                        | code | kind      |
      | restore    | {"checkpoint": "no-such-checkpoint"}             | 4    | not_found |
      | restore    | {}                                               | 2    | usage     |
      | restore    | {"checkpoint": "@", "mode": "everything"}        | 2    | usage     |
      | restore    | {"checkpoint": "@", "paths": ["../outside"]}     | 3    | invalid   |
      | restore    | {"checkpoint": "@", "force": true}               | 2    | usage     |
      | list       | {"limit": "ten"}                                 | 2    | usage     |
      | list       | {"limit": -1}                                    | 3    | invalid   |
      | checkpoint | {"labels": {"Not A Key": "x"}}                   | 3    | invalid   |
      | revert     | {"decision": "nothing", "reason": "x"}           | 4    | not_found |
      | revert     | {"decision": "nothing"}                          | 2    | usage     |
      | undo       | {}                                               | 4    | not_found |
      | diff       | {"from": "@", "name_only": true, "stat": true}   | 2    | usage     |
      | sessions   | {"session": "no-such-session"}                   | 4    | not_found |
      | rewind     | {"session": "no-such-session", "turn": 1}        | 4    | not_found |
      | rewind     | {"turn": 1}                                      | 2    | usage     |

  Scenario: a busy workspace (its lock held) refuses a tool call as it refuses the command
    Given a checkpoint "base"
    And I change "a.txt" to "changed\n"
    And another process holds the workspace lock
    When I call the MCP tool "restore" with:
      """
      {"checkpoint": "<base>"}
      """
    Then the exit code is 5
    And the JSON error has "error.kind" equal to "conflict"
    And the file "a.txt" contains "changed\n"

  Scenario: an unknown tool is a protocol error
    When I call the MCP tool "rm_rf"
    Then the exit code is 2
    And stderr contains "unknown tool"

  Scenario: outside a workspace the server refuses to start
    When I run "plan -C <outside> mcp"
    Then the exit code is 4
    And stderr contains "plan init"
