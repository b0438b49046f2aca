Feature: Checkpoints
  `plan checkpoint create` records the workspace; list, show and delete look after the records.
  A checkpoint is named by its ID or by a unique prefix of at least 4 characters.

  Background:
    Given an initialised workspace

  Scenario: create reports the checkpoint it recorded
    Given a file "a.txt" containing "hello\n"
    And a file "c.txt" containing "0123456789"
    And a file "dir/b.bin" of 100 bytes of random data
    When I run "plan checkpoint create --note first --json"
    Then it succeeds
    And the JSON output has "id" matching "^[0-9a-f]{24}$"
    And the JSON output has "type" equal to "manual"
    And the JSON output has "note" equal to "first"
    And the JSON output has "files" equal to "3"
    And the JSON output has "bytes" equal to "116"
    And the JSON output has "stored_bytes" greater than 0
    And the JSON output has "created_at" matching "^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
    And the JSON output has "parent_id" equal to "null"
    And the JSON output has "decision_id" equal to "null"
    And the JSON output has "rollback_count" equal to "0"

  Scenario: create without --json says what it recorded
    Given a file "a.txt" containing "hello\n"
    When I run "plan checkpoint create"
    Then it succeeds
    And stdout contains "Created checkpoint"
    And stdout contains "1 files"

  Scenario: symlinks count as files; directories do not
    Given a file "a.txt" containing "hello\n"
    And a symlink "link" pointing to "a.txt"
    And an empty directory "empty"
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "files" equal to "2"

  Scenario: an empty workspace makes an empty checkpoint
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "files" equal to "0"
    And the JSON output has "bytes" equal to "0"

  Scenario: each checkpoint's parent is the one before it
    Given a file "a.txt" containing "hello\n"
    When I run "plan checkpoint create --note one" and remember the checkpoint as "one"
    And I change "a.txt" to "changed\n"
    And I run "plan checkpoint create --note two --json"
    Then it succeeds
    And the JSON output has "parent_id" equal to "<one>"
    And the JSON output has "note" equal to "two"

  Scenario: a second checkpoint of an unchanged workspace stores nothing new
    Given a file "data.bin" of 20000 bytes of random data
    And a checkpoint "one"
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "bytes" equal to "20000"
    And the JSON output has "stored_bytes" equal to "0"

  Scenario: --type sets the type
    When I run "plan checkpoint create --type milestone --json"
    Then it succeeds
    And the JSON output has "type" equal to "milestone"

  Scenario: an unknown type is invalid input and records nothing
    When I run "plan checkpoint create --type nonsense"
    Then the exit code is 3
    And stderr contains "nonsense"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 0 items

  Scenario: list shows the newest first
    Given a file "a.txt" containing "1"
    When I run "plan checkpoint create --note one" and remember the checkpoint as "one"
    And I change "a.txt" to "2"
    And I run "plan checkpoint create --note two" and remember the checkpoint as "two"
    And I change "a.txt" to "3"
    And I run "plan checkpoint create --note three" and remember the checkpoint as "three"
    And I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 3 items
    And the JSON output has "0.id" equal to "<three>"
    And the JSON output has "1.id" equal to "<two>"
    And the JSON output has "2.id" equal to "<one>"
    And the JSON output has "0.note" equal to "three"

  Scenario: list says when there are no checkpoints
    When I run "plan checkpoint list"
    Then it succeeds
    And stdout contains "No checkpoints yet"

  Scenario: show --files lists every entry with its kind, mode, size and hash
    Given a file "a.txt" containing "hello\n"
    And an executable file "bin/run.sh" containing "#!/bin/sh\n"
    And a symlink "link" pointing to "a.txt"
    And an empty directory "empty"
    And a checkpoint "base"
    When I run "plan checkpoint show <base> --files --json"
    Then it succeeds
    And the JSON output has "id" equal to "<base>"
    And the JSON output has "entries" with exactly:
      | path       | kind    | mode |
      | a.txt      | file    | 0644 |
      | bin        | dir     | 0755 |
      | bin/run.sh | file    | 0755 |
      | empty      | dir     | 0755 |
      | link       | symlink | 0777 |
    And the JSON output has "entries" including:
      | path       | size | sha256                                                           |
      | a.txt      | 6    | 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 |
      | bin/run.sh | 10   | a8076d3d28d21e02012b20eaf7dbf75409a6277134439025f282e368e3305abf |
      | bin        | 0    | null                                                             |
    And the JSON output has "entries" including:
      | path | target | sha256 |
      | link | a.txt  | null   |

  Scenario: show without --files has no entries
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "base"
    When I run "plan checkpoint show <base>"
    Then it succeeds
    And stdout contains "checkpoint <base>"
    And stdout contains "type:        manual"
    And stdout contains "note:        base"

  Scenario: a unique prefix of 4 characters names a checkpoint
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "base"
    When I run "plan --json checkpoint show <base:4>"
    Then it succeeds
    And the JSON output has "id" equal to "<base>"

  Scenario: an unknown ID is not found
    When I run "plan checkpoint show 0123456789ab"
    Then the exit code is 4
    And stderr contains "0123456789ab"

  Scenario Outline: a malformed ID is invalid input: <id>
    When I run "plan checkpoint show <id>"
    Then the exit code is 3
    And stderr contains "malformed"

    Examples:
      | id                            |
      | ../x                          |
      | abc                           |
      | AB.CD                         |
      | 0123456789abcdef0123456789abc |

  Scenario: an ambiguous prefix is invalid input
    Given a file "a.txt" containing "1"
    # IDs begin with a millisecond timestamp: checkpoints taken moments apart share their first 4
    # characters.
    When I run "plan checkpoint create" and remember the checkpoint as "one"
    And I change "a.txt" to "2"
    And I run "plan checkpoint create" and remember the checkpoint as "two"
    And I run "plan checkpoint show <one:4>"
    Then the exit code is 3
    And stderr contains "<one:4>"
    When I run "plan checkpoint show <two>"
    Then it succeeds

  Scenario: a deleted checkpoint is gone
    Given a file "a.txt" containing "1"
    And a checkpoint "one"
    And I change "a.txt" to "2"
    And a checkpoint "two"
    When I run "plan checkpoint delete <one>"
    Then it succeeds
    When I run "plan checkpoint show <one>"
    Then the exit code is 4
    When I run "plan --json checkpoint list"
    Then the JSON output lists 1 item
    And the JSON output has "0.id" equal to "<two>"
    When I run "plan checkpoint delete <one>"
    Then the exit code is 4

  Scenario: .plan and .git are never part of a checkpoint
    Given a file "a.txt" containing "hello\n"
    And a file ".git/HEAD" containing "ref: refs/heads/main\n"
    And a file ".git/config" containing "[core]\n"
    When I run "plan checkpoint create" and remember the checkpoint as "base"
    And I run "plan --json checkpoint show <base> --files"
    Then it succeeds
    And the JSON output has "files" equal to "1"
    And the JSON output has no "entries" item whose "path" starts with ".plan"
    And the JSON output has no "entries" item whose "path" starts with ".git"
    And the JSON output has 1 "entries"

  Scenario: .planignore excludes paths
    Given a .planignore with:
      """
      build/
      *.log
      """
    And a file "a.txt" containing "hello\n"
    And a file "build/out.o" containing "object"
    And a file "debug.log" containing "log"
    And a file "src/trace.log" containing "log"
    When I run "plan checkpoint create" and remember the checkpoint as "base"
    And I run "plan --json checkpoint show <base> --files"
    Then it succeeds
    And the JSON output has "entries" with exactly:
      | path        | kind |
      | .planignore | file |
      | a.txt       | file |
      | src         | dir  |
    And the JSON output has "files" equal to "2"

  Scenario: a FIFO is skipped with a warning and the checkpoint still succeeds
    Given a file "a.txt" containing "hello\n"
    And a FIFO "pipe"
    When I run "plan checkpoint create" and remember the checkpoint as "base"
    Then stderr contains "warning"
    And stderr contains "pipe"
    When I run "plan --json checkpoint show <base> --files"
    Then it succeeds
    And the JSON output has "files" equal to "1"
    And the JSON output has no "entries" item whose "path" starts with "pipe"

  Scenario: the commit checked out in the enclosing git repository is recorded
    Given a file "a.txt" containing "hello\n"
    And a file ".git/HEAD" containing "ref: refs/heads/main\n"
    And a file ".git/refs/heads/main" containing "3b18e512dba79e4c8300dd08aeb37f8e728b8dad\n"
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "git_commit" equal to "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"

  Scenario: an unborn branch records no commit
    Given a file ".git/HEAD" containing "ref: refs/heads/main\n"
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "git_commit" equal to "null"

  Scenario: a HEAD that names no commit records no commit
    Given a file ".git/HEAD" containing "not a commit\n"
    When I run "plan checkpoint create --json"
    Then it succeeds
    And the JSON output has "git_commit" equal to "null"

  Scenario: labels tag checkpoints and filter the list; a pinned checkpoint outlives prune
    Given an initialised workspace
    And a file "a.txt" containing "a\n"
    And I run "plan --json checkpoint create --label phase=design --label task=T-1"
    And I remember the JSON output "id" as "design"
    And I run "plan checkpoint create --label phase=build"
    When I run "plan --json checkpoint list --label phase=design"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.labels.task" equal to "T-1"
    When I run "plan checkpoint create --label Phase=x"
    Then the exit code is 3
    When I run "plan checkpoint pin <design>"
    And I run "plan --json checkpoint prune --keep 0 --yes"
    Then it succeeds
    And the JSON output has "reasons.<design>" containing "pinned"
    When I run "plan checkpoint unpin <design>"
    And I run "plan checkpoint prune --keep 0 --yes"
    And I run "plan --json checkpoint list"
    Then the JSON output lists 0 items

  Scenario: prune --policy applies the retention classes of .plan/config.yaml
    Given an initialised workspace
    And the workspace's configuration also says:
      """
      retention:
        classes:
          - labels: {phase: milestone}
            keep: forever
          - type: manual
            older_than: 1ns
      """
    And a file "a.txt" containing "a\n"
    And I run "plan --json checkpoint create --label phase=milestone"
    And I remember the JSON output "id" as "milestone"
    And I run "plan checkpoint create"
    And I run "plan checkpoint create --type safe_state"
    When I run "plan --json checkpoint prune --policy --yes"
    Then it succeeds
    And the JSON output has 1 "deleted"
    And the JSON output has "reasons.<milestone>" containing "kept forever"
    When I run "plan --json checkpoint list"
    Then the JSON output lists 2 items
