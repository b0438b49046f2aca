Feature: plan is the undo layer of AI coding agents
  An agent's hooks call `plan hook AGENT EVENT` with their JSON on stdin: before each mutating tool
  call plan checkpoints the workspace, after it records what the call changed; a prompt opens a turn
  and the agent's stop closes it. The session is a plan, each tool call a decision whose ID is the
  agent's tool-call ID, so rewind, revert, undo, diff and status work on what the agent did.

  Background:
    Given an initialised workspace
    And a file "build/a.o" containing "object"
    And a file "main.go" containing "package main"

  Scenario: a Claude Code turn is recorded call by call, and read-only calls cost nothing
    When the agent "claude" sends "UserPromptSubmit" from "claude-UserPromptSubmit"
    Then the exit code is 0
    And stdout is empty
    When the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Read"
    Then stdout is empty
    And stderr is empty
    When the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Write"
    And a file "README.md" containing "# Project"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Write"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And I delete "build"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    And the agent "claude" sends "Stop" from "claude-Stop"
    Then the exit code is 0
    And stdout is empty
    When I run "plan --json sessions"
    Then the JSON output has "sessions.0.plan" equal to "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"
    And the JSON output has "sessions.0.turns.0.prompt" equal to "Clean up the build directory and add a README"
    And the JSON output has "sessions.0.turns.0.tool_calls.0.id" equal to "toolu_01HxW7kqT3oAbvR4yNcD8sLm"
    And the JSON output has "sessions.0.turns.0.tool_calls.0.files.0.path" equal to "README.md"
    And the JSON output has "sessions.0.turns.0.tool_calls.1.summary" equal to "Bash: rm -rf build"
    And the JSON output has "sessions.0.turns.0.tool_calls.1.status" equal to "succeeded"
    When I run "plan status --plan claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"
    Then stdout contains "toolu_01Q2pZr8VbN5mKc3tYxE7wJd"
    When I run "plan checkpoint list --label agent=claude --label tool=Bash"
    Then stdout contains "pre_decision"

  Scenario: rewind to before the destructive call is byte-exact, and plan undo takes it back
    Given the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And I remember the workspace as "before rm"
    And I delete "build"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    And I remember the workspace as "after rm"
    When I run "plan --yes rewind --session 7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12 --tool-call toolu_01Q2pZr8VbN5mKc3tYxE7wJd"
    Then it succeeds
    And stdout contains "Reverted decisions: toolu_01Q2pZr8VbN5mKc3tYxE7wJd"
    And the workspace equals "before rm"
    When I run "plan --yes undo"
    Then it succeeds
    And the workspace equals "after rm"

  Scenario: a turn's diff, and a surgical revert of one call that keeps the later ones
    Given the agent "claude" sends "UserPromptSubmit" from "claude-UserPromptSubmit"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Write"
    And a file "README.md" containing "# Project"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Write"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And I delete "build"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    And the agent "claude" sends "Stop" from "claude-Stop"
    When I run "plan diff --name-only claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12#1^ claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12#1"
    Then stdout contains "README.md"
    And stdout contains "build/a.o"
    When I run "plan --yes revert --decision toolu_01HxW7kqT3oAbvR4yNcD8sLm --reason 'no README'"
    Then it succeeds
    And "README.md" does not exist
    And "build" does not exist
    When I run "plan --yes correct --decision toolu_01Q2pZr8VbN5mKc3tYxE7wJd --reason again"
    Then the exit code is 5
    And stderr contains "plan cannot run an agent's tool call again"

  Scenario: rewind to before a turn restores the files only, or marks the decisions only
    Given the agent "claude" sends "UserPromptSubmit" from "claude-UserPromptSubmit"
    And I remember the workspace as "turn start"
    And the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And I delete "build"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    When I run "plan --yes rewind --session claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12 --turn 1 --files"
    Then it succeeds
    And the workspace equals "turn start"
    When I run "plan --json sessions"
    Then the JSON output has "sessions.0.turns.0.tool_calls.0.status" equal to "succeeded"
    When I run "plan --yes rewind --session claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12 --turn 1 --state"
    Then stdout contains "the files were left as they are"
    When I run "plan --json sessions"
    Then the JSON output has "sessions.0.turns.0.tool_calls.0.status" equal to "reverted"

  Scenario: Codex and Gemini CLI sessions are recorded the same way
    Given a file "config.py" containing "x = 1"
    When the agent "codex" sends "UserPromptSubmit" from "codex-UserPromptSubmit"
    And the agent "codex" sends "PreToolUse" from "codex-PreToolUse-Bash"
    And I delete "config.py"
    And the agent "codex" sends "PostToolUse" from "codex-PostToolUse-Bash"
    And the agent "codex" sends "Stop" from "codex-Stop"
    And the agent "gemini" sends "BeforeAgent" from "gemini-BeforeAgent"
    And the agent "gemini" sends "BeforeTool" from "gemini-BeforeTool-write_file"
    And a file "hello.txt" containing "hello"
    And the agent "gemini" sends "AfterTool" from "gemini-AfterTool-write_file"
    And the agent "gemini" sends "AfterAgent" from "gemini-AfterAgent"
    Then the exit code is 0
    When I run "plan sessions 0199a5c3-8e2f-7b40-a1d2-3c4e5f607182"
    Then stdout contains "call_Kx81bQ2mZt6pLr0aVc3Ns9Yd"
    And stdout contains "config.py"
    When I run "plan --json sessions c0ffee00-1234-4abc-9def-0123456789ab"
    Then the JSON output has "sessions.0.turns.0.tool_calls.0.tool" equal to "write_file"
    And the JSON output has "sessions.0.turns.0.tool_calls.0.files.0.path" equal to "hello.txt"
    When I run "plan --yes rewind --session 0199a5c3-8e2f-7b40-a1d2-3c4e5f607182 --turn 1 --files -- config.py"
    Then it succeeds
    And the file "config.py" contains "x = 1"
    And the file "hello.txt" contains "hello"

  Scenario Outline: a payload plan cannot read is refused, the tool runs, and nothing is recorded: <case>
    When the agent "claude" sends "PreToolUse" with:
      """
      <payload>
      """
    Then the exit code is 1
    And stdout is empty
    And stderr contains "<message>"
    When I run "plan sessions"
    Then stdout contains "No agent session is recorded"

    Examples:
      | case               | payload                                                                  | message                       |
      | not JSON           | tool: Bash                                                               | not a JSON object             |
      | broken JSON        | {"session_id": "s",                                                      | malformed JSON                |
      | another event      | {"session_id": "s", "hook_event_name": "PostToolUse"}                    | payload is a PostToolUse event |
      | no session         | {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {}}        | no session_id                 |
      | no tool-call ID    | {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "x"}} | no tool_use_id                |

  Scenario: an unknown agent or event is refused with what plan speaks
    When I run "plan hook cursor PreToolUse"
    Then the exit code is 1
    And stderr contains "plan hook speaks claude, codex, gemini"
    When I run "plan hook gemini PreToolUse"
    Then the exit code is 1
    And stderr contains "unknown gemini hook event"

  Scenario: when plan cannot checkpoint, the tool runs with a warning, unless hooks.fail_closed blocks it
    When the agent "claude" sends "PreToolUse" with:
      """
      {"session_id": "bad/session", "cwd": "$CWD", "hook_event_name": "PreToolUse", "tool_name": "Bash",
       "tool_input": {"command": "rm -rf build"}, "tool_use_id": "toolu_01X"}
      """
    Then the exit code is 0
    And stdout contains "systemMessage"
    And stderr contains "could not checkpoint before the Bash call toolu_01X"
    Given the workspace's configuration also says:
      """
      hooks:
        fail_closed: true
      """
    When the agent "claude" sends "PreToolUse" with:
      """
      {"session_id": "bad/session", "cwd": "$CWD", "hook_event_name": "PreToolUse", "tool_name": "Bash",
       "tool_input": {"command": "rm -rf build"}, "tool_use_id": "toolu_01X"}
      """
    Then the exit code is 2
    And stdout is empty
    And stderr contains "so it was blocked (hooks.fail_closed)"

  Scenario: rewind refuses what it cannot do
    Given the agent "claude" sends "PreToolUse" from "claude-PreToolUse-Bash"
    And the agent "claude" sends "PostToolUse" from "claude-PostToolUse-Bash"
    When I run "plan --yes rewind --session nope --turn 1"
    Then the exit code is 4
    And stderr contains "no agent session"
    When I run "plan --yes rewind --session claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12 --turn 2"
    Then the exit code is 4
    And stderr contains "not a turn 2"
    When I run "plan --yes rewind --session claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"
    Then the exit code is 2
    And stderr contains "--turn N or --tool-call ID"
