@undo
Feature: What is pending before a checkpoint: status, conflicts, resolve and validate
  `plan status` tells what changed since the newest checkpoint, an interrupted operation, the
  conflicts a surgical revert left and the store's health in one line. `plan conflicts` lists those
  conflicts and `plan resolve PATH…` marks them done; until then their correction shows as
  needs_attention. `plan validate` says whether the workspace is worth checkpointing, running the
  configured check command, and `checkpoint create --validate` refuses a workspace that is not.

  Background:
    Given an initialised workspace
    And a file "cfg.txt" containing "a\nb\nc\nd\ne\n"
    And a plan file "edits.yaml" with:
      """
      name: edits
      decisions:
        - id: two
          run: printf 'A\nb\nc\nd\ne\n' > cfg.txt
        - id: three
          run: printf 'AA\nb\nc\nd\ne\n' > cfg.txt
      """
    And I run "plan run <plans>/edits.yaml"

  Scenario: a revert with markers leaves a conflict that status, conflicts and correction list show
    When I run "plan --json revert --decision two --reason wrong --conflicts markers --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan status"
    Then it succeeds
    And stdout contains "unresolved conflicts: 1 (cfg.txt): edit them, then plan resolve PATH…"
    And stdout contains "store: ok (private, "
    When I run "plan --json conflicts"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.path" equal to "cfg.txt"
    And the JSON output has "0.correction_id" equal to "<fix>"
    And the JSON output has "0.decision_id" equal to "two"
    When I run "plan --json correction show <fix>"
    Then the JSON output has "status" equal to "needs_attention"

  Scenario: resolve refuses a file that still holds conflict markers, then marks it once edited
    Given I run "plan --json revert --decision two --reason wrong --conflicts markers --yes"
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan resolve cfg.txt"
    Then the exit code is 5
    And stderr contains "cfg.txt still holds conflict markers (line 1)"
    When I run "plan --json conflicts"
    Then the JSON output lists 1 item
    When I change "cfg.txt" to "settled\n"
    And I run "plan --json resolve cfg.txt"
    Then it succeeds
    And the JSON output has "0.resolved_at" matching "^20"
    When I run "plan conflicts"
    Then stdout is:
      """
      No unresolved conflicts.
      """
    When I run "plan --json correction show <fix>"
    Then the JSON output has "status" equal to "succeeded"
    And the JSON output has "needs_attention" equal to "false"
    When I run "plan status"
    Then stdout does not contain "unresolved conflicts"

  Scenario: resolve --force marks a file with markers left, as it is
    Given I run "plan revert --decision two --reason wrong --conflicts markers --yes"
    When I run "plan resolve --force cfg.txt"
    Then it succeeds
    And the file "cfg.txt" contains "<<<<<<< live\nAA\n||||||| after two\nA\n=======\na\n>>>>>>> before two\nb\nc\nd\ne\n"

  Scenario Outline: resolve refuses bad input
    Given I run "plan revert --decision two --reason wrong --conflicts markers --yes"
    When I run "plan resolve <args>"
    Then the exit code is <code>

    Examples:
      | args          | code |
      |               | 2    |
      | other.txt     | 4    |
      | /etc/passwd   | 3    |

  Scenario: validate fails while a conflict is unresolved, and checkpoint create --validate records nothing
    Given I run "plan revert --decision two --reason wrong --conflicts markers --yes"
    When I run "plan --json validate"
    Then the exit code is 1
    And the JSON output has "ok" equal to "false"
    And the JSON output has "problems.0" containing "1 unresolved conflict(s): cfg.txt"
    And the JSON error has "error.kind" equal to "validation_failed"
    When I run "plan --json checkpoint list"
    And I remember the JSON output "0.id" as "newest"
    When I run "plan checkpoint create --validate"
    Then the exit code is 1
    And stderr contains "no checkpoint was taken"
    When I run "plan --json checkpoint list"
    Then the JSON output has "0.id" equal to "<newest>"

  Scenario: the configured check command decides
    Given the workspace's configuration also says:
      """
      validate:
        command: test -f ok.txt
      """
    When I run "plan validate"
    Then the exit code is 1
    And stdout contains "the check \"test -f ok.txt\" failed with exit code 1"
    When I run "plan checkpoint create --validate"
    Then the exit code is 1
    Given a file "ok.txt" containing ""
    When I run "plan --json validate"
    Then it succeeds
    And the JSON output has "check.ran" equal to "true"
    And the JSON output has "check.exit_code" equal to "0"
    When I run "plan checkpoint create --validate"
    Then it succeeds

  Scenario: validate without a configured check, and a blank one refused
    When I run "plan validate"
    Then it succeeds
    And stdout contains "no check command configured"
    Given the workspace's configuration also says:
      """
      validate:
        command: "   "
      """
    When I run "plan validate"
    Then the exit code is 3
    And stderr contains "validate.command is blank"

  Scenario: a crash left an operation pending: status says so, validate fails, and the check does not run
    Given a checkpoint "target"
    And I change "cfg.txt" to "later\n"
    And the workspace's configuration also says:
      """
      validate:
        command: touch ran.txt
      """
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "restore.removed"
    Then the process was killed
    When I run "plan --json status"
    Then the JSON output has "workspace.pending_operation.kind" equal to "rollback"
    When I run "plan --json validate"
    Then the exit code is 1
    And the JSON output has "problems.0" containing "is pending: plan recover finishes it"
    And the JSON output has "check.ran" equal to "false"
    And "ran.txt" does not exist
    When I run "plan checkpoint create --validate"
    Then it succeeds
    And stderr contains "recovered an interrupted rollback"
