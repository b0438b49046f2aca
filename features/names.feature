Feature: Names for checkpoints
  Everywhere a checkpoint is asked for, it can be named by its ID or a unique prefix, by a unique
  prefix of its short name (letters k-z, shown by `checkpoint list`), by `@` (the head: the checkpoint
  the workspace stands on) and `@~N` (its Nth parent), and by decision: `DECISION^` is the state
  before a decision, `DECISION` the state it left. The end of a run is a checkpoint of its own (`post_run`).

  Background:
    Given an initialised workspace
    And a plan file "p.yaml" with:
      """
      name: demo
      decisions:
        - id: one
          run: echo one > f.txt
        - id: two
          run: echo two >> f.txt
      """
    And I run "plan --json run <plans>/p.yaml"
    And it succeeds
    And I remember the JSON output "end_checkpoint_id" as "end"

  Scenario: @, @~N and decision names read the states of a run
    When I run "plan cat @ f.txt"
    Then stdout is:
      """
      one
      two
      """
    When I run "plan cat one f.txt"
    Then stdout is:
      """
      one
      """
    When I run "plan diff two^ two --name-only"
    Then stdout is:
      """
      f.txt
      """
    When I run "plan --json checkpoint show @~2"
    Then the JSON output has "note" equal to "before decision one, attempt 1"
    When I run "plan --json checkpoint show two"
    Then the JSON output has "id" equal to "<end>"
    And the JSON output has "type" equal to "post_run"

  Scenario: a short name from the list names its checkpoint
    When I run "plan --json checkpoint list"
    And I remember the JSON output "1.short_id" as "short"
    And I remember the JSON output "1.id" as "full"
    And I run "plan --json checkpoint show <short>"
    Then the JSON output has "id" equal to "<full>"

  Scenario: the end of a run is restored byte for byte by a rollback to the last decision's name
    When I change "f.txt" to "lost?\n"
    And a file "g.txt" containing "later\n"
    And I run "plan --yes rollback --to-checkpoint two"
    Then it succeeds
    And the file "f.txt" contains "one\ntwo\n"
    And "g.txt" does not exist
    # The head is the rollback's target, not its safety checkpoint (the newest): the workspace
    # reads clean, and a rollback to @ changes nothing.
    When I run "plan status"
    Then it succeeds
    And stdout contains "no changes since"
    When I run "plan --yes rollback --to-checkpoint @"
    Then it succeeds
    And the file "f.txt" contains "one\ntwo\n"
    And "g.txt" does not exist

  Scenario: @~N walks parents across a rollback
    When I run "plan --yes rollback --to-checkpoint one^"
    Then it succeeds
    When a file "f.txt" containing "branch\n"
    And I run "plan checkpoint create --note branched"
    Then it succeeds
    # branched's parent is one^ (the rollback's target), the first checkpoint: the newest-first
    # list (five checkpoints, two of them past the branch) is not what @~N walks.
    When I run "plan cat @ f.txt"
    Then stdout is:
      """
      branch
      """
    When I run "plan checkpoint show @~2"
    Then the exit code is 4
    And stderr contains "the history of the head ends 1 parent back"

  Scenario: names that name nothing, or are malformed
    When I run "plan checkpoint show @~9"
    Then the exit code is 4
    And stderr contains "the history of the head ends 2 parents back"
    When I run "plan checkpoint show @~x"
    Then the exit code is 3
    When I run "plan checkpoint show three^"
    Then the exit code is 4
    When I run "plan checkpoint show ABC!"
    Then the exit code is 3

  Scenario: label: and note: name the newest checkpoint that matches
    Given a file "g.txt" containing "green\n"
    When I run "plan checkpoint create --label phase=green --note 'tests pass'"
    Then it succeeds
    When I change "g.txt" to "red\n"
    And I run "plan checkpoint create --note wip"
    Then it succeeds
    When I run "plan cat label:phase=green g.txt"
    Then stdout is:
      """
      green
      """
    When I run "plan cat note:tests g.txt"
    Then stdout is:
      """
      green
      """
    When I run "plan cat label:phase=blue g.txt"
    Then the exit code is 4
    When I run "plan cat label:phase g.txt"
    Then the exit code is 3
    And stderr contains "label:KEY=VALUE"
