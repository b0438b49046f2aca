Feature: plan agent install, uninstall and status
  plan's hooks go into the coding agent's own settings file (Claude Code's .claude/settings.json,
  Codex's .codex/hooks.json, Gemini CLI's .gemini/settings.json), next to the user's own entries,
  which are never touched. Installing twice is installing once; uninstalling removes plan's entries
  only; a settings file plan cannot read is refused and left as it was.

  Background:
    Given a workspace
    And my home directory is "<outside>/home"

  Scenario: installing for Claude Code initialises the workspace and merges the hooks
    Given a file ".claude/settings.json" containing "{\"model\": \"opus\", \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}]}}"
    When I run "plan --json agent install claude --bin plan"
    Then it succeeds
    And the JSON output has "initialised" equal to "true"
    And the JSON output has "changed" equal to "true"
    And the JSON output has "scope" equal to "project"
    And ".plan" is a directory
    And the file ".claude/settings.json" includes "\"model\": \"opus\""
    And the file ".claude/settings.json" includes "\"command\": \"lint.sh\""
    And the file ".claude/settings.json" includes "\"command\": \"plan hook claude PreToolUse\""
    And the file ".claude/settings.json" includes "\"matcher\": \"Edit|Write|MultiEdit|NotebookEdit|Bash\""
    And the file ".claude/settings.json" includes "plan hook claude UserPromptSubmit"
    And the file ".claude/settings.json" includes "plan hook claude Stop"
    And the file ".claude/settings.json" includes "plan hook claude SessionEnd"

  Scenario: installing twice is installing once
    When I run "plan agent install claude --bin plan"
    And I remember the workspace as "once"
    And I run "plan agent install claude --bin plan"
    Then it succeeds
    And stdout contains "already installed"
    And the workspace equals "once"
    And the file ".claude/settings.json" includes "plan hook claude PreToolUse" 1 time

  Scenario: uninstall removes plan's entries and keeps the user's
    Given a file ".claude/settings.json" containing "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}, \"env\": {\"A\": \"1\"}}"
    When I run "plan agent install claude --bin plan"
    And I run "plan agent uninstall claude"
    Then it succeeds
    And stdout contains "Removed plan's hooks for Claude Code"
    And the file ".claude/settings.json" does not include "plan hook"
    And the file ".claude/settings.json" includes "\"command\": \"say done\""
    And the file ".claude/settings.json" includes "\"A\": \"1\""
    When I run "plan agent uninstall claude"
    Then it succeeds
    And stdout contains "has no plan hooks to remove"

  Scenario: Codex's hooks go into .codex/hooks.json, with the trust step named
    When I run "plan agent install codex --bin plan"
    Then it succeeds
    And stdout contains "note: Codex runs a new hook only once you have trusted it"
    And the file ".codex/hooks.json" includes "\"command\": \"plan hook codex PreToolUse\""
    And the file ".codex/hooks.json" includes "\"matcher\": \"Bash|apply_patch|Edit|Write\""
    And the file ".codex/hooks.json" includes "plan hook codex Stop"

  Scenario: Gemini CLI's user settings get BeforeTool, AfterTool, BeforeAgent, AfterAgent and SessionEnd
    When I run "plan agent install gemini --user --bin plan"
    Then it succeeds
    And "<outside>/home/.gemini/settings.json" exists
    And the file "<outside>/home/.gemini/settings.json" includes "\"matcher\": \"write_file|replace|run_shell_command\""
    And the file "<outside>/home/.gemini/settings.json" includes "plan hook gemini BeforeTool"
    And the file "<outside>/home/.gemini/settings.json" includes "plan hook gemini AfterAgent"
    And the file "<outside>/home/.gemini/settings.json" includes "plan hook gemini SessionEnd"
    And ".gemini" does not exist

  Scenario: status tells every agent's project and user settings
    Given a file ".gemini/settings.json" containing "{\"hooks\": {\"BeforeTool\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"plan hook gemini BeforeTool\"}]}]}}"
    When I run "plan agent install claude --bin plan"
    And I run "plan --json agent status"
    Then it succeeds
    And the JSON output has "agents.0.state" equal to "installed"
    And the JSON output has "agents.1.state" equal to "absent"
    And the JSON output has "agents.4.state" equal to "partial"
    And the JSON output has "agents.4.missing.0" equal to "AfterTool"

  Scenario Outline: a malformed settings file is refused and left byte-identical
    Given a file ".claude/settings.json" containing "<content>"
    When I run "plan agent <verb> claude"
    Then the exit code is 3
    And stderr contains "<message>"
    And the file ".claude/settings.json" contains "<content>"

    Examples:
      | verb      | content                            | message                  |
      | install   | {\"hooks\": {                      | is not valid JSON        |
      | install   | [1, 2]                             | is not a JSON object     |
      | install   | {\"a\": 1, \"a\": 2}               | duplicate key            |
      | install   | {\"hooks\": {\"Stop\": \"x\"}}     | hooks.Stop is not a list |
      | uninstall | {\"hooks\": []}                    | \"hooks\" is not an object |

  Scenario: a refused install does not make the workspace
    Given a file ".claude/settings.json" containing "// mine\n{}"
    When I run "plan agent install claude"
    Then the exit code is 3
    And ".plan" does not exist

  Scenario: status reports a malformed file instead of failing
    Given a file ".codex/hooks.json" containing "{"
    When I run "plan agent status"
    Then it succeeds
    And stdout contains "codex   project  invalid"

  Scenario Outline: bad arguments are usage errors
    When I run "plan agent <args>"
    Then the exit code is 2
    And stderr contains "<message>"

    Examples:
      | args                            | message                 |
      | install                         | name the agent          |
      | install cursor                  | unknown agent \"cursor\" |
      | install claude --user --project | exclude each other      |
      | status extra                    | unexpected argument     |
