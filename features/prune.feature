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
