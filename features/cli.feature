Feature: Command line
  Mistakes on the command line are usage errors (exit 2) that name the problem; with --json every
  failure is one JSON document on stderr, so scripts can tell the kinds of failure apart.

  Background:
    Given an initialised workspace

  Scenario: plan --help exits 0 and lists the commands
    When I run "plan --help"
    Then it succeeds
    And stdout contains "checkpoint"
    And stdout contains "rollback"
    And stdout contains "recover"

  Scenario Outline: usage errors exit 2: <case>
    When I run "<command>"
    Then the exit code is 2
    And stderr contains "<message>"

    Examples:
      | case                            | command                                 | message                     |
      | unknown command                 | plan frobnicate                         | unknown command "frobnicate" |
      | unknown subcommand              | plan checkpoint frobnicate              | unknown command "frobnicate" |
      | missing subcommand              | plan checkpoint                         | missing subcommand          |
      | unknown flag                    | plan checkpoint list --frobnicate       | frobnicate                  |
      | unknown global flag             | plan --frobnicate checkpoint list       | frobnicate                  |
      | missing argument                | plan checkpoint show                    | missing argument ID         |
      | three checkpoints to diff       | plan diff aaaa bbbb cccc -- x           | at most two checkpoints     |
      | missing rollback target         | plan rollback --yes                     | --to-checkpoint             |
      | flag without its value          | plan rollback --to-checkpoint           | to-checkpoint               |
      | unexpected argument             | plan checkpoint list extra              | unexpected argument "extra" |

  Scenario Outline: with --json a failure is one error document on stderr: <kind>
    When I run "<command>"
    Then the exit code is <code>
    And stdout is empty
    And the JSON error has "error.kind" equal to "<kind>"
    And the JSON error has "code" equal to "<code>"
    And the JSON error has "error.message" matching "."

    Examples:
      | command                                   | kind      | code |
      | plan --json frobnicate                    | usage     | 2    |
      | plan checkpoint list --frobnicate --json  | usage     | 2    |
      | plan --json checkpoint show ../x          | invalid   | 3    |
      | plan checkpoint show 0123456789ab --json  | not_found | 4    |
      | plan checkpoint create --type nonsense --json | invalid | 3  |

  Scenario: flags may follow positional arguments and global flags may follow the command
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "base"
    When I run "plan checkpoint show <base> --files --json"
    Then it succeeds
    And the JSON output has "id" equal to "<base>"
    And the JSON output has 1 "entries"

  Scenario: the hint of a missing argument names the full command
    When I run "plan checkpoint show"
    Then the exit code is 2
    And stderr contains "plan checkpoint show --help"
