Feature: Rollback
  `plan rollback --to-checkpoint ID` puts the workspace back exactly as the checkpoint recorded it:
  contents, deleted files back, new files gone, modes, symlinks, empty directories. It first records
  the current state, so every rollback can be undone, and it is atomic: it succeeds entirely, or the
  workspace is left exactly as it was and the exit code is not 0.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "hello\n"
    And a file "docs/readme.md" containing "# docs\n"
    And an executable file "bin/run.sh" containing "#!/bin/sh\necho run\n"
    And a symlink "link" pointing to "a.txt"
    And a symlink "dangling" pointing to "nowhere"
    And an empty directory "empty"
    And a file "data.bin" of 65536 bytes of random data
    And a checkpoint "base"

  Scenario: rollback restores the checkpoint byte for byte
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And a file "newdir/sub/deep.txt" containing "deep\n"
    And I change the mode of "bin/run.sh" to "0644"
    And I replace "link" with a file containing "not a link any more"
    And I delete "empty"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then it succeeds
    And the workspace equals "base"
    And the file "a.txt" contains "hello\n"
    And the file "docs/readme.md" contains "# docs\n"
    And "new.txt" does not exist
    And "newdir" does not exist
    And the mode of "bin/run.sh" is "0755"
    And "link" is a symlink to "a.txt"
    And "dangling" is a symlink to "nowhere"
    And "empty" is a directory
    And stdout contains "Rolled back to <base>"
    And stdout contains "Undo with: plan rollback --to-checkpoint"

  Scenario: rollback reports what it did as JSON
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And I change the mode of "bin/run.sh" to "0644"
    And I run "plan --json rollback --to-checkpoint <base> --yes"
    Then it succeeds
    And the JSON output has "checkpoint_id" equal to "<base>"
    And the JSON output has "backup_checkpoint_id" matching "^[0-9a-f]{24}$"
    And the JSON output has "added" equal to "1"
    And the JSON output has "modified" equal to "2"
    And the JSON output has "deleted" equal to "1"
    And the JSON output has "dry_run" equal to "false"
    And the JSON output has 0 "reverted_decisions"
    And the workspace equals "base"

  Scenario: rollback replaces what changed type
    When I delete "docs"
    And a file "docs" containing "a file where a directory was"
    And I delete "a.txt"
    And a file "a.txt/inner" containing "a directory where a file was"
    And I replace "dangling" with a file containing "a file where a symlink was"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then it succeeds
    And the workspace equals "base"

  Scenario: a rollback to a checkpoint that matches changes nothing
    When I run "plan --json rollback --to-checkpoint <base> --yes"
    Then it succeeds
    And the JSON output has "added" equal to "0"
    And the JSON output has "modified" equal to "0"
    And the JSON output has "deleted" equal to "0"
    And the workspace equals "base"

  Scenario: a rollback can be undone by rolling back to its backup
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And I change the mode of "bin/run.sh" to "0700"
    And I remember the workspace as "changed"
    And I run "plan rollback --to-checkpoint <base> --yes" and remember the backup as "undo"
    Then the workspace equals "base"
    When I run "plan --json checkpoint show <undo>"
    Then it succeeds
    And the JSON output has "type" equal to "pre_rollback"
    When I run "plan rollback --to-checkpoint <undo> --yes"
    Then it succeeds
    And the workspace equals "changed"

  Scenario: --dry-run reports the counts and changes nothing
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And I remember the workspace as "changed"
    And I run "plan --json rollback --to-checkpoint <base> --dry-run"
    Then it succeeds
    And the JSON output has "dry_run" equal to "true"
    And the JSON output has "checkpoint_id" equal to "<base>"
    And the JSON output has "backup_checkpoint_id" equal to "null"
    And the JSON output has "added" equal to "1"
    And the JSON output has "modified" equal to "1"
    And the JSON output has "deleted" equal to "1"
    And the workspace equals "changed"
    When I run "plan --json checkpoint list"
    Then the JSON output lists 1 item

  Scenario: --dry-run without --json lists the changes
    When I change "a.txt" to "changed\n"
    And I run "plan rollback --to-checkpoint <base> --dry-run"
    Then it succeeds
    And stdout contains "M a.txt"
    And the file "a.txt" contains "changed\n"

  Scenario: without --yes and without a terminal, rollback refuses and changes nothing
    When I change "a.txt" to "changed\n"
    And a file "new.txt" containing "new\n"
    And I remember the workspace as "changed"
    And I run "plan rollback --to-checkpoint <base>"
    Then the exit code is 2
    And stderr contains "--yes"
    And the workspace equals "changed"
    When I run "plan --json checkpoint list"
    Then the JSON output lists 1 item

  Scenario: answering no at the prompt changes nothing
    When I change "a.txt" to "changed\n"
    And I remember the workspace as "changed"
    And I will answer "n"
    And I run "plan rollback --to-checkpoint <base>"
    Then the exit code is 8
    And stderr contains "Continue? [y/N]"
    And stderr contains "M a.txt"
    And the workspace equals "changed"

  Scenario: an empty answer at the prompt means no
    When I change "a.txt" to "changed\n"
    And I remember the workspace as "changed"
    And I will answer ""
    And I run "plan rollback --to-checkpoint <base>"
    Then the exit code is 8
    And the workspace equals "changed"

  Scenario: answering yes at the prompt rolls back
    When I change "a.txt" to "changed\n"
    And I will answer "y"
    And I run "plan rollback --to-checkpoint <base>"
    Then it succeeds
    And stderr contains "Continue? [y/N]"
    And the workspace equals "base"

  Scenario: an unknown checkpoint is not found and nothing changes
    When I change "a.txt" to "changed\n"
    And I remember the workspace as "changed"
    And I run "plan rollback --to-checkpoint 0123456789ab --yes"
    Then the exit code is 4
    And the workspace equals "changed"

  Scenario: a malformed checkpoint ID is invalid input
    When I run "plan rollback --to-checkpoint ../../etc --yes"
    Then the exit code is 3
    And the workspace equals "base"

  Scenario: ignored paths are left alone
    Given a .planignore with:
      """
      build/
      *.log
      """
    And a file "build/out.o" containing "old object"
    And a file "debug.log" containing "old log"
    And a checkpoint "ignoring"
    When I change "build/out.o" to "new object"
    And a file "build/extra.o" containing "extra"
    And I change "debug.log" to "new log"
    And a file "docs/trace.log" containing "trace"
    And I change "a.txt" to "changed\n"
    And I run "plan rollback --to-checkpoint <ignoring> --yes"
    Then it succeeds
    And the file "a.txt" contains "hello\n"
    And the file "build/out.o" contains "new object"
    And the file "build/extra.o" contains "extra"
    And the file "debug.log" contains "new log"
    And the file "docs/trace.log" contains "trace"

  Scenario: rollback goes back and forth between checkpoints
    When I change "a.txt" to "second\n"
    And a file "second.txt" containing "2"
    And a checkpoint "second"
    And I change "a.txt" to "third\n"
    And I delete "docs"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then it succeeds
    And the workspace equals "base"
    When I run "plan rollback --to-checkpoint <second> --yes"
    Then it succeeds
    And the workspace equals "second"

  Scenario: each rollback counts on its target
    When I run "plan --json checkpoint show <base>"
    Then the JSON output has "rollback_count" equal to "0"
    When I change "a.txt" to "changed\n"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then it succeeds
    When I run "plan --json checkpoint show <base>"
    Then the JSON output has "rollback_count" equal to "1"
    When I delete "a.txt"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then it succeeds
    When I run "plan --json checkpoint show <base>"
    Then the JSON output has "rollback_count" equal to "2"

  Scenario: a damaged store is refused before the workspace is touched
    When I change "data.bin" to "overwritten"
    And I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And I remember the workspace as "changed"
    And I flip a byte in the middle of every pack file
    And I run "plan --json rollback --to-checkpoint <base> --yes"
    Then the exit code is 6
    And the JSON error has "error.kind" equal to "integrity"
    And the workspace equals "changed"

  Scenario: a file that cannot be replaced fails the rollback and leaves the workspace as it was
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "new.txt" containing "new\n"
    And I change "bin/run.sh" to "#!/bin/sh\necho changed\n"
    And I make "bin/run.sh" immutable
    And I remember the workspace as "changed"
    And I run "plan rollback --to-checkpoint <base> --yes"
    Then the exit code is not 0
    And stderr contains "bin/run.sh"
    And the workspace equals "changed"
    When I run "plan --json recover"
    Then it succeeds
    And the JSON output has "recovered" equal to "false"
    When I run "plan --json checkpoint show <base>"
    Then the JSON output has "rollback_count" equal to "0"

  Scenario: a rollback never writes through a symlink that replaced a directory
    Given a file "d/x" containing "inside\n"
    And a checkpoint "with-d"
    When I replace "d" with a symlink to "<outside>"
    And I run "plan rollback --to-checkpoint <with-d> --yes"
    Then it succeeds
    And "d" is a directory
    And the file "d/x" contains "inside\n"
    And the workspace equals "with-d"
    And the outside directory is empty

  Scenario: a rollback while another plan process holds the workspace waits, then exits 5 naming it
    Given a file "a.txt" containing "one"
    When I run "plan checkpoint create --json" and remember the checkpoint as "one"
    Then it succeeds
    When I change "a.txt" to "two"
    And I remember the workspace as "changed"
    Given another plan process holds the workspace lock as "pid 4242, plan run, since 2026-11-22T03:00:00Z"
    When I run "plan rollback --to-checkpoint <one> --yes"
    Then the exit code is 5
    And stderr contains "the workspace is busy"
    And stderr contains "pid 4242, plan run"
    And the workspace equals "changed"
    When the other process releases the workspace lock
    And I run "plan rollback --to-checkpoint <one> --yes"
    Then it succeeds
    And the file "a.txt" contains "one"

  Scenario: a rollback across a .planignore change never stores, overwrites or deletes what either side excludes
    Given a file "a.txt" containing "v1\n"
    And a checkpoint "before-ignore"
    And a .planignore with:
      """
      secret.env
      """
    And a file "secret.env" containing "TOKEN=1\n"
    When I run "plan rollback --to-checkpoint <before-ignore> --yes" and remember the backup as "undo"
    Then it succeeds
    And the file "secret.env" contains "TOKEN=1\n"
    And ".planignore" does not exist
    When I run "plan rollback --to-checkpoint <undo> --yes" and remember the backup as "undo2"
    Then it succeeds
    And the file "secret.env" contains "TOKEN=1\n"
    And the file ".planignore" contains "secret.env\n"
    When I run "plan --json checkpoint show <undo2> --files"
    Then it succeeds
    And the JSON output has no "entries" item whose "path" starts with "secret.env"
    When I run "plan rollback --to-checkpoint <undo2> --yes"
    Then it succeeds
    And the file "secret.env" contains "TOKEN=1\n"

  Scenario: rollback with paths restores only those paths, and its backup undoes it
    When I change "a.txt" to "changed\n"
    And I delete "docs/readme.md"
    And a file "docs/new.md" containing "new\n"
    And a file "kept.txt" containing "work to keep\n"
    And I change the mode of "bin/run.sh" to "0644"
    And I remember the workspace as "changed"
    And I run "plan --json rollback --to-checkpoint <base> --yes -- docs" and remember the backup as "undo"
    Then it succeeds
    And the JSON output has "mode" equal to "files"
    And the JSON output has 1 "paths"
    And the JSON output has "paths.0" equal to "docs"
    And the JSON output has "added" equal to "1"
    And the JSON output has "deleted" equal to "1"
    And the file "docs/readme.md" contains "# docs\n"
    And "docs/new.md" does not exist
    And the file "a.txt" contains "changed\n"
    And the file "kept.txt" contains "work to keep\n"
    And the mode of "bin/run.sh" is "0644"
    When I run "plan rollback --to-checkpoint <undo> --yes"
    Then it succeeds
    And the workspace equals "changed"

  Scenario: rollback with paths: a dry run changes nothing, and bad paths are refused
    When I change "a.txt" to "changed\n"
    And I run "plan --json rollback --to-checkpoint <base> --dry-run a.txt"
    Then it succeeds
    And the JSON output has "dry_run" equal to "true"
    And the JSON output has "modified" equal to "1"
    And the file "a.txt" contains "changed\n"
    When I run "plan rollback --to-checkpoint <base> --yes -- ../escape"
    Then the exit code is 3
    And stderr contains "outside the workspace"
    When I run "plan rollback --to-checkpoint <base> --yes -- not/there"
    Then the exit code is 4
    When I run "plan rollback --to-checkpoint <base> --mode state --dry-run a.txt"
    Then the exit code is 3
    And the file "a.txt" contains "changed\n"
