Feature: Operation log and undo
  `plan history` lists every command that changed the workspace, newest first, with what it created
  or used. `plan undo` undoes the most recent rollback, correction or decision that was not undone
  yet, by going back to the safety checkpoint taken just before it; running it again undoes the one
  before.

  Background:
    Given an initialised workspace
    And a file "src.txt" containing "source\n"
    And a checkpoint "base"
    And a plan file "plan.yaml" with:
      """
      name: build
      decisions:
        - id: gen
          run: echo generated > gen.txt
        - id: pack
          run: cat gen.txt src.txt > pack.txt
      """
    And I run "plan run <plans>/plan.yaml"

  Scenario: undoing a rollback brings back the files and the decision states
    Given I remember the workspace as "after run"
    And I run "plan --json status"
    And I remember the JSON output's "decisions" as "decisions"
    When I run "plan rollback --to-checkpoint <base> --yes"
    And I run "plan --json undo --yes"
    Then it succeeds
    And the JSON output has "undone.kind" equal to "rollback"
    And the JSON output has 2 "restored_decisions"
    And the workspace equals "after run"
    When I run "plan --json status"
    Then the JSON output's "decisions" equals the one remembered as "decisions"

  Scenario: undo walks back through the decisions of a run, then has nothing left
    When I run "plan undo --yes"
    Then it succeeds
    And "pack.txt" does not exist
    And the file "gen.txt" contains "generated\n"
    When I run "plan undo --yes"
    Then it succeeds
    And "gen.txt" does not exist
    When I run "plan undo --yes"
    Then the exit code is 4
    And stderr contains "nothing to undo"

  Scenario: history shows every operation, newest first, and which were undone
    When I run "plan --json undo --yes"
    And I remember the JSON output "operation.id" as "undo-id"
    And I run "plan --json history"
    Then it succeeds
    And the JSON output has "0.kind" equal to "undo"
    And the JSON output has "0.id" equal to "<undo-id>"
    And the JSON output has "1.kind" equal to "decision"
    And the JSON output has "1.args.0" equal to "pack"
    And the JSON output has "1.undone_by" equal to "<undo-id>"
    And the JSON output has "3.kind" equal to "run"
    When I run "plan --json history --limit 1"
    Then the JSON output lists 1 item

  Scenario: a dry run names what it would undo and changes nothing
    Given I remember the workspace as "after run"
    When I run "plan undo --dry-run"
    Then it succeeds
    And stdout contains "Undoing decision"
    And the workspace equals "after run"
