Feature: Initialise a workspace
  `plan init` creates .plan/, which binds the directory to its workspace, and the workspace's history
  (its checkpoints), kept in the per-user data directory; `--store workspace` keeps the history in
  .plan/ itself. It is safe to run again, and every other command refuses to work in a directory
  that was never initialised, saying how to fix it.

  Scenario: init creates the state directory
    Given a workspace
    When I run "plan init --json"
    Then it succeeds
    And the JSON output has "created" equal to "true"
    And the JSON output has "workspace" equal to "<workspace>"
    And the JSON output has "state_dir" equal to "<workspace>/.plan"
    And the JSON output has "history_dir" equal to "<history>"
    And the JSON output has "history_dir" containing "<data>/workspaces/"
    And "<history>/plan.db" exists
    And ".plan/plan.db" does not exist

  Scenario: init --store workspace keeps the history in .plan/
    Given a workspace
    When I run "plan init --store workspace --json"
    Then it succeeds
    And the JSON output has "state_dir" equal to "<workspace>/.plan"
    And the JSON output has "history_dir" equal to "<workspace>/.plan"
    And ".plan/plan.db" exists

  Scenario: init says what it did
    Given a workspace
    When I run "plan init"
    Then it succeeds
    And stdout contains "Initialised plan workspace in <workspace>"
    When I run "plan init"
    Then it succeeds
    And stdout contains "already initialised"

  Scenario: init is idempotent and keeps what the workspace holds
    Given an initialised workspace
    And a file "a.txt" containing "hello\n"
    And a checkpoint "kept"
    When I run "plan init --json"
    Then it succeeds
    And the JSON output has "created" equal to "false"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.id" equal to "<kept>"
    And the workspace equals "kept"

  Scenario Outline: <command> needs an initialised workspace
    Given a workspace
    And a file "a.txt" containing "hello\n"
    When I run "<command>"
    Then the exit code is 4
    And stderr contains "plan init"
    And ".plan" does not exist

    Examples:
      | command                                       |
      | plan checkpoint create                        |
      | plan checkpoint list                          |
      | plan checkpoint show 0123abcd                 |
      | plan checkpoint delete 0123abcd               |
      | plan diff 0123abcd                            |
      | plan rollback --to-checkpoint 0123abcd --yes  |
      | plan rollback --to-checkpoint 0123abcd --dry-run |
      | plan recover                                  |

  Scenario: the hint comes as a JSON error document with --json
    Given a workspace
    When I run "plan --json checkpoint list"
    Then the exit code is 4
    And stdout is empty
    And the JSON error has "error.kind" equal to "not_found"
    And the JSON error has "error.message" containing "plan init"
    And the JSON error has "code" equal to "4"

  Scenario: -C and --workspace name the workspace
    Given a workspace
    And a file "project/a.txt" containing "hello\n"
    When I run "plan -C project init"
    Then it succeeds
    And "project/.plan/config.yaml" exists
    And ".plan" does not exist
    When I run "plan --workspace project checkpoint create --json"
    Then it succeeds
    And the JSON output has "files" equal to "1"
    When I run "plan checkpoint list --json -C project"
    Then it succeeds
    And the JSON output lists 1 item
    When I run "plan checkpoint list"
    Then the exit code is 4

  Scenario: -C naming a missing directory is not found
    Given a workspace
    When I run "plan -C missing checkpoint list"
    Then the exit code is 4
    And stderr contains "missing"
