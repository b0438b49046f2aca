Feature: Terminal conventions
  plan behaves as git and jj users expect of a command-line tool: `plan help COMMAND`, a suggestion
  for a mistyped command or flag, lists cut with --limit, colour only when asked for or on a
  terminal, completions that offer the workspace's names, a manual page with its exit statuses, and
  a prompt answered no told apart from a usage mistake.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "one\n"
    And a plan file "p.yaml" with:
      """
      name: demo
      decisions:
        - id: build
          run: echo built > b.txt
      """
    And I run "plan run <plans>/p.yaml"
    And it succeeds

  Scenario: plan help prints a command's help page, and suggests the command meant
    When I run "plan help checkpoint prune"
    Then it succeeds
    And stdout contains "plan checkpoint prune [command options]"
    And stdout contains "8 declined"
    And stdout does not contain "(default: false)"
    When I run "plan help chekpoint"
    Then the exit code is 2
    And stderr contains "unknown command "chekpoint": did you mean "checkpoint"?"
    When I run "plan help status extra"
    Then the exit code is 2

  Scenario: a mistyped flag is named with the flag meant
    When I run "plan status --jsno"
    Then the exit code is 2
    And stderr contains "unknown flag --jsno: did you mean --json?"
    And stdout is empty

  Scenario: every list takes --limit
    When I run "plan --json checkpoint list --limit 1"
    Then it succeeds
    And the JSON output lists 1 item
    When I run "plan --json plans --limit 1"
    Then the JSON output lists 1 item
    When I run "plan --json history --limit 2"
    Then the JSON output lists 2 items
    When I run "plan checkpoint list --limit -1"
    Then the exit code is 3
    And stdout is empty

  Scenario: colour when asked for, never in JSON or with --color=never
    When I change "a.txt" to "two\n"
    And I run "plan --color=always diff @"
    Then it succeeds
    And stdout contains "[33mM"
    When I run "plan --color=never diff @"
    Then stdout contains "M a.txt"
    And stdout does not contain "[33m"
    When I run "plan --color=always --json diff @"
    Then stdout does not contain "[33m"
    When I run "plan --color=sometimes status"
    Then the exit code is 2
    And stderr contains "auto, always or never"

  Scenario: completions offer the workspace's checkpoints and decisions
    When I run "plan rollback --to-checkpoint --generate-bash-completion"
    Then it succeeds
    And stdout contains "@~1"
    And stdout contains "build^"
    When I run "plan show --generate-bash-completion"
    Then stdout contains "build"
    When I run "plan completion fish"
    Then stdout contains "__plan_complete"

  Scenario: the manual page lists the exit statuses and keeps brackets
    When I run "plan man"
    Then it succeeds
    And stdout contains ".SH EXIT STATUS"
    And stdout contains "s3://bucket[/prefix]"

  Scenario: answering no at a prompt is its own exit status
    When I change "a.txt" to "changed\n"
    And I remember the workspace as "changed"
    And I will answer "n"
    And I run "plan rollback --to-checkpoint build^"
    Then the exit code is 8
    And stderr contains "rollback cancelled: nothing was changed"
    And the workspace equals "changed"
