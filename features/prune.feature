Feature: Prune frees what it prunes
  `plan checkpoint prune` deletes checkpoints; `plan gc` then deletes what only they referenced. A kept
  checkpoint's version of a file is often a delta against a version only a pruned checkpoint held (a
  log appended to at every checkpoint): gc stores it again rather than keep that version, so the
  store ends up the size of a fresh store of the kept checkpoints.

  Background:
    Given an initialised workspace

  Scenario: gc after prune frees the versions of appended files only pruned checkpoints held
    Given 12 checkpoints of 20 files that grow by appends
    When I run "plan checkpoint prune --keep 1 --yes"
    Then it succeeds
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "objects_reencoded" greater than 0
    And the JSON output has "bytes_reclaimed" greater than 0
    And the store's packs take at most 1.2 times those of a fresh store of the workspace
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "objects_reencoded" equal to "0"

  Scenario: gc says in words what it re-encoded
    Given 10 checkpoints of 5 files that grow by appends
    When I run "plan checkpoint prune --keep 2 --yes"
    Then it succeeds
    When I run "plan gc"
    Then it succeeds
    And stdout contains "Re-encoded"
    And stdout contains "kept objects whose delta base only deleted checkpoints held"

  Scenario: a gc killed once it re-encoded leaves every kept checkpoint readable, and the next one frees the rest
    Given 12 checkpoints of 10 files that grow by appends
    When I run "plan checkpoint prune --keep 1 --yes"
    Then it succeeds
    When I run "plan gc" with the failpoint "gc.reencoded"
    Then the process was killed
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "objects_reencoded" equal to "0"
    And the JSON output has "bytes_reclaimed" greater than 0
    And the store's packs take at most 1.2 times those of a fresh store of the workspace
    When I run "plan doctor"
    Then it succeeds

  Scenario: gc with nothing pruned re-encodes nothing
    Given 3 checkpoints of 5 files that grow by appends
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "objects_reencoded" equal to "0"
    And the JSON output has "packs_deleted" equal to "0"

  Scenario: gc with a bad --grace deletes nothing
    Given 3 checkpoints of 2 files that grow by appends
    When I run "plan checkpoint prune --keep 1 --yes"
    Then it succeeds
    When I run "plan gc --grace soon"
    Then the exit code is 3
    And stderr contains "--grace"
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "packs_deleted" greater than 0

  Scenario: a checkpoint that takes the store past its budget prunes the oldest checkpoints nothing needs
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: 200KiB
      """
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "one"
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "two"
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "three"
    And a file "data.bin" of 60000 bytes of random data
    When I run "plan checkpoint create --note four"
    Then it succeeds
    And stderr contains "the store went over its budget: pruned the"
    When I run "plan checkpoint list --json"
    Then the JSON output has no "" item whose "note" starts with "one"
    And the JSON output has "0.note" equal to "four"
    When I run "plan stats --json"
    Then it succeeds
    And the JSON output has "budget.max_bytes" equal to "204800"
    And the JSON output has "budget.over" equal to "false"
    When I run "plan verify --read-data"
    Then it succeeds

  Scenario: when nothing can be freed the checkpoint still happens and the warning says why
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: 50KiB
      """
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "first"
    When I run "plan checkpoint pin <first>"
    Then it succeeds
    Given a file "data.bin" of 60000 bytes of random data
    When I run "plan checkpoint create --note second"
    Then it succeeds
    And stderr contains "over its budget"
    And stderr contains "nothing more can be freed without deleting a checkpoint that is still needed"
    And stderr contains "1 pinned"
    And stderr contains "1 the newest checkpoint"
    When I run "plan checkpoint list --json"
    Then the JSON output lists 2 items
    When I run "plan stats --json"
    Then the JSON output has "budget.over" equal to "true"
    And the JSON output has "budget.prunable" equal to "0"
    And the JSON output has "budget.held" containing "pinned"

  Scenario: the budget never prunes a live decision's pre_decision checkpoint
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: 40KiB
      """
    And a file "data.bin" of 30000 bytes of random data
    When I run "plan exec --id grow -- sh -c 'head -c 30000 /dev/urandom > grown.bin'"
    Then it succeeds
    Given a file "more.bin" of 30000 bytes of random data
    When I run "plan checkpoint create --note after"
    Then it succeeds
    And stderr contains "pre_decision checkpoint(s) of live decisions"
    When I run "plan checkpoint list"
    Then stdout contains "pre_decision"

  Scenario: from 80% of the budget every command warns
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: 70KiB
      """
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "first"
    When I run "plan status"
    Then it succeeds
    And stderr contains "of its budget of 70 KiB"
    When I run "plan checkpoint list --json"
    Then it succeeds
    And stderr contains "past it, the oldest checkpoints nothing needs are pruned"

  Scenario: without a budget stats says so and nothing warns
    Given a file "a.txt" containing "a\n"
    And a checkpoint "a"
    When I run "plan stats --json"
    Then it succeeds
    And the JSON output has "budget" equal to "null"
    And stderr does not contain "budget"

  Scenario: a budget that is not a size is refused by stats, and warned about by other commands
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: lots
      """
    When I run "plan stats"
    Then the exit code is 3
    And stderr contains "store.max_bytes"
    Given a file "a.txt" containing "a\n"
    When I run "plan checkpoint create"
    Then it succeeds
    And stderr contains "store.max_bytes \"lots\" is not a positive size"
