@undo
Feature: Undo the undo, undo to any entry, and what prune keeps for them
  `plan undo --to ENTRY` restores the state right after a `plan history` entry, `plan redo` takes
  back the newest undo unless something changed the workspace since, an operation whose safety
  checkpoint was pruned is stepped past with a warning, and prune keeps what the next undo and redo
  need and says which operations undo can no longer take back on their own. Calendar retention
  keeps the newest checkpoint of recent hours, days, weeks and months, as restic's forget does.

  Background:
    Given an initialised workspace
    And a plan file "abc.yaml" with:
      """
      name: abc
      decisions:
        - id: a
          run: echo a > a.txt
        - id: b
          run: echo b > b.txt
        - id: c
          run: echo c > c.txt
      """
    And I run "plan run <plans>/abc.yaml"

  Scenario: undo --to a decision's entry restores the state right after it, and redo brings the rest back
    Given I remember the workspace as "after run"
    And I run "plan --json history"
    And I remember the JSON output "2.id" as "a-entry"
    When I run "plan --json undo --to <a-entry> --yes"
    Then it succeeds
    And the JSON output has 2 "undone_all"
    And the JSON output has "undone.args.0" equal to "b"
    And the file "a.txt" contains "a\n"
    And "b.txt" does not exist
    And "c.txt" does not exist
    When I run "plan --json redo --yes"
    Then it succeeds
    And the JSON output has 2 "redone"
    And the JSON output has "restored_decisions.0" equal to "b"
    And the JSON output has "restored_decisions.1" equal to "c"
    And the workspace equals "after run"
    When I run "plan redo --yes"
    Then the exit code is 4
    And stderr contains "nothing to redo"

  Scenario: redo after a new operation is refused and loses nothing
    Given I run "plan undo --yes"
    And I run "plan exec --id d -- sh -c 'echo d > d.txt'"
    And I remember the workspace as "after d"
    When I run "plan redo --yes"
    Then the exit code is 5
    And stderr contains "ran after it and a redo would throw its changes away"
    And the workspace equals "after d"

  Scenario: a checkpoint between the undo and the redo does not block it
    Given I run "plan undo --yes"
    And I run "plan checkpoint create --note between"
    When I run "plan redo --yes"
    Then it succeeds
    And the file "c.txt" contains "c\n"

  Scenario Outline: undo --to refuses bad entries and changes nothing
    Given I remember the workspace as "after run"
    When I run "plan undo --to <entry> --yes"
    Then the exit code is <code>
    And the workspace equals "after run"

    Examples:
      | entry                    | code |
      | ffffffffffffffffffffffff | 4    |
      | 01                       | 3    |
      | ''                       | 2    |

  Scenario: undo --to the newest entry has nothing to undo
    Given I run "plan --json history"
    And I remember the JSON output "0.id" as "newest"
    When I run "plan undo --to <newest> --yes"
    Then the exit code is 4
    And stderr contains "nothing to undo after"

  Scenario: prune keeps the next undo's safety checkpoint and names the undos it takes away
    Given a checkpoint "base"
    And I run "plan rollback --to-checkpoint <base> --yes"
    And I run "plan rollback --to-checkpoint <base> --yes"
    When I run "plan --json checkpoint prune --keep 0 --dry-run"
    Then it succeeds
    And the JSON output has 1 "undo_lost"
    And the JSON output has "undo_lost.0.kind" equal to "rollback"
    When I run "plan checkpoint prune --keep 0"
    Then it succeeds
    And stdout contains ": safety checkpoint of rollback "
    And stdout contains "the next `plan undo` rolls back to it"
    And stdout contains "plan undo can no longer take back these 1 operations"
    When I run "plan undo --yes"
    Then it succeeds

  Scenario: undo steps past an operation whose safety checkpoint was deleted, with a warning
    Given I remember the workspace as "after run"
    And I run "plan --json history"
    And I remember the JSON output "0.undo_checkpoint" as "c-safety"
    When I run "plan checkpoint delete <c-safety> --yes"
    Then the exit code is 5
    And stderr contains "pre_decision checkpoint of live decision c"
    When I run "plan checkpoint delete <c-safety> --yes --force"
    And I run "plan --json undo --yes"
    Then it succeeds
    And stderr contains "was deleted (pruned?): undoing it too"
    And the JSON output has 1 "skipped"
    And the JSON output has "undone.args.0" equal to "b"
    And "b.txt" does not exist
    And "c.txt" does not exist
    When I run "plan redo --yes"
    Then it succeeds
    And the workspace equals "after run"

  Scenario: calendar retention keeps the newest checkpoint of the day and lists what would go
    Given a checkpoint "one"
    And I change "a.txt" to "a2"
    And a checkpoint "two"
    When I run "plan --json checkpoint prune --keep-daily 1 --dry-run"
    Then it succeeds
    And the JSON output has "dry_run" equal to "true"
    And the JSON output has "reasons.<two>" containing "(--keep-daily)"
    And the JSON output has "deleted.0" equal to "<one>"
    When I run "plan checkpoint prune --keep-daily 1 --dry-run"
    Then stdout contains "  delete  <one>"

  Scenario: calendar retention from the configuration, with --policy
    Given a checkpoint "one"
    And the workspace's configuration also says:
      """
      retention:
        keep_weekly: 1
      """
    When I run "plan --json checkpoint prune --policy --dry-run"
    Then it succeeds
    And the JSON output has "reasons.<one>" containing "(--keep-weekly)"

  Scenario Outline: calendar retention refuses bad input
    When I run "plan checkpoint prune <args>"
    Then the exit code is <code>

    Examples:
      | args                          | code |
      | --keep-daily -1               | 3    |
      | --keep-monthly x              | 2    |
      | --policy --keep-hourly 2      | 2    |

  Scenario: a zero calendar count in the configuration is refused
    Given the workspace's configuration also says:
      """
      retention:
        keep_daily: 0
      """
    When I run "plan checkpoint prune --policy --dry-run"
    Then the exit code is 3
    And stderr contains "retention.keep_daily must be at least 1"

  Scenario: a plan file that changed a succeeded decision is reported, and --rerun-changed re-executes from it
    Given a file "p.yaml" with:
      """
      name: p
      decisions:
        - id: x
          run: echo x > x.txt
        - id: y
          run: cat x.txt > y.txt
      """
    And I run "plan run p.yaml"
    And a file "p.yaml" with:
      """
      name: p
      decisions:
        - id: x
          run: echo X > x.txt
        - id: y
          run: cat x.txt > y.txt
      """
    When I run "plan --json run p.yaml"
    Then it succeeds
    And stderr contains "changed decisions that already succeeded: x (command)"
    And the JSON output has "changed_decisions.0.id" equal to "x"
    And the JSON output has "rerun_from" equal to "null"
    And the file "y.txt" contains "x\n"
    When I run "plan --json run p.yaml --rerun-changed"
    Then it succeeds
    And the JSON output has "rerun_from" equal to "x"
    And the file "y.txt" contains "X\n"
    And the file "p.yaml" contains "name: p\ndecisions:\n  - id: x\n    run: echo X > x.txt\n  - id: y\n    run: cat x.txt > y.txt\n"
    When I run "plan run p.yaml"
    Then stderr does not contain "changed decisions"
