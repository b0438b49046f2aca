Feature: Recovery from an interrupted rollback
  A rollback keeps a journal while it changes the workspace. If the process dies part-way, the next
  `plan` command that changes the workspace (or `plan recover`) finishes the rollback or undoes it
  before doing anything else, so the workspace is never left half rolled back. Read-only commands
  only report it. Recovery never destroys what it did not record: work done after the crash is
  recorded as a pre_recover checkpoint first.

  These scenarios run the plan binary with PLAN_FAILPOINT, which kills it (SIGKILL, like a crash) or
  makes a step fail at a named point of the rollback.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "hello\n"
    And a file "docs/readme.md" containing "# docs\n"
    And an executable file "bin/run.sh" containing "#!/bin/sh\n"
    And a symlink "link" pointing to "a.txt"
    And an empty directory "empty"
    And a checkpoint "target"
    And I change "a.txt" to "changed\n"
    And I delete "docs"
    And I delete "empty"
    And a file "new.txt" containing "new\n"
    And a file "newdir/deep.txt" containing "deep\n"
    And I replace "link" with a file containing "no longer a link"
    And I change the mode of "bin/run.sh" to "0600"
    And I remember the workspace as "changed"

  Scenario: nothing to recover
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "false"
    And the JSON output has "operation" equal to "null"
    And the JSON output has "outcome" equal to "null"
    When I run "plan recover"
    Then it succeeds
    And stdout contains "Nothing to recover"

  Scenario: plan recover finishes a rollback killed after it removed stale paths
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "restore.removed"
    Then the process was killed
    And "<history>/journal.json" exists
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "true"
    And the JSON output has "outcome" equal to "completed"
    And the JSON output has "operation" matching "^[0-9a-f]{24}$"
    And the workspace equals "target"
    And "<history>/journal.json" does not exist
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "false"
    When I run "plan --json checkpoint show <target>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "1"

  Scenario Outline: the next command that changes the workspace finishes a rollback killed at <failpoint>
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "<failpoint>"
    Then the process was killed
    And I remember the workspace as "crashed"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And stderr contains "is pending"
    And the workspace equals "crashed"
    When I run "plan gc"
    Then it succeeds
    And stderr contains "recovered an interrupted rollback"
    And the workspace equals "target"
    When I run "plan --json checkpoint show <target>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "1"
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "false"

    Examples:
      | failpoint          |
      | restore.staged     |
      | restore.removed    |
      | restore.write      |
      | restore.applied    |
      | rollback.applied   |
      | rollback.recorded  |

  Scenario: a killed rollback can still be undone through its backup once recovered
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "restore.write"
    Then the process was killed
    When I run "plan recover --json"
    Then it succeeds
    And the workspace equals "target"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And I remember the JSON output "0.id" as "backup"
    And the JSON output has "0.type" equal to "pre_rollback"
    When I run "plan rollback --to-checkpoint <backup> --yes"
    Then it succeeds
    And the workspace equals "changed"

  Scenario Outline: a rollback step that fails at <failpoint> is undone
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "<failpoint>=error"
    Then the exit code is not 0
    And stderr contains "injected failure"
    And the workspace equals "changed"
    And "<history>/journal.json" does not exist
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "false"
    When I run "plan --json checkpoint show <target>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "0"

    Examples:
      | failpoint        |
      | restore.staged   |
      | restore.removed  |
      | restore.write    |
      | restore.applied  |
      | rollback.applied |

  Scenario Outline: after a rollback step failed at <failpoint>, recovery leaves the workspace as it was
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "<failpoint>=error"
    Then the exit code is not 0
    When I run "plan recover"
    Then it succeeds
    And the workspace equals "changed"
    And "<history>/journal.json" does not exist
    When I run "plan --json checkpoint show <target>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "0"

    Examples:
      | failpoint       |
      | restore.staged  |
      | restore.removed |
      | restore.write   |
      | restore.applied |

  # The database commit is the commit point. A failure before it (rollback.applied: the record
  # could not be written) undoes the rollback, as above. Past it, the rollback has succeeded: a
  # journal left behind (rollback.recorded: it could not be removed) is finished by the next command
  # without changing anything.
  Scenario: a rollback whose journal cannot be removed has still succeeded
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "rollback.recorded=error"
    Then it succeeds
    And the workspace equals "target"
    And "<history>/journal.json" exists
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "true"
    And the JSON output has "outcome" equal to "completed"
    And the workspace equals "target"
    And "<history>/journal.json" does not exist
    When I run "plan --json checkpoint show <target>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "1"

  Scenario: work done after a crash survives recovery in a pre_recover checkpoint
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "restore.removed"
    Then the process was killed
    Given a file "new-work.txt" containing "precious\n"
    And I change "a.txt" to "edited after the crash\n"
    And I remember the workspace as "after-crash"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And stderr contains "interrupted rollback"
    And the file "new-work.txt" contains "precious\n"
    When I run "plan diff <target>"
    Then it succeeds
    And the workspace equals "after-crash"
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "outcome" equal to "completed"
    And the JSON output has "recorded_checkpoint_id" matching "^[0-9a-f]{24}$"
    And the JSON output has "unrecorded_paths.0" equal to "a.txt"
    And the JSON output has "unrecorded_paths.1" equal to "new-work.txt"
    And the workspace equals "target"
    And I remember the JSON output "recorded_checkpoint_id" as "recorded"
    When I run "plan --json checkpoint show <recorded>"
    Then it succeeds
    And the JSON output has "type" equal to "pre_recover"
    When I run "plan rollback --to-checkpoint <recorded> --yes"
    Then it succeeds
    And the workspace equals "after-crash"

  Scenario: a command that changes the workspace records work done after the crash before it recovers
    When I run "plan rollback --to-checkpoint <target> --yes" with the failpoint "restore.staged"
    Then the process was killed
    Given a file "new-work.txt" containing "precious\n"
    And I remember the workspace as "after-crash"
    When I run "plan --json checkpoint create --note next"
    Then it succeeds
    And stderr contains "recorded first as checkpoint"
    And the workspace equals "target"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output has "0.note" equal to "next"
    And the JSON output has "1.type" equal to "pre_recover"
    And I remember the JSON output "1.id" as "recorded"
    When I run "plan rollback --to-checkpoint <recorded> --yes"
    Then it succeeds
    And the workspace equals "after-crash"
