Feature: gc --aggressive packs the store as tightly as git's, off the hot path
  Checkpoints store one record per file, compressed fast. `plan gc --aggressive` collects as `plan gc`
  does, then repacks what is live as `git gc --aggressive` does: small files compressed together in
  bundles, larger ones as deltas against similar files, strong compression. Every checkpoint reads and
  restores as before, and a kill at any step loses nothing.

  Scenario: gc --aggressive bundles small files and every checkpoint still restores
    Given an initialised workspace
    And a file "src/a.go" containing "package a\n\nfunc A() int { return 1 }\n"
    And a file "src/b.go" containing "package a\n\nfunc B() int { return 2 }\n"
    And a file "docs/readme.md" containing "a readme\n"
    And a checkpoint "one"
    And 4 checkpoints of 20 files that grow by appends
    And a file "src/a.go" containing "package a\n\nfunc A() int { return 3 }\n"
    And a checkpoint "two"
    When I run "plan gc --aggressive --json"
    Then it succeeds
    And the JSON output has "repack.bundles" greater than 0
    And the JSON output has "repack.bundled" greater than 20
    And the JSON output has "repack.packs_deleted" greater than 0
    And the JSON output has "repack.bytes_after" greater than 0
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan rollback --to-checkpoint <one> --yes"
    Then it succeeds
    And the file "src/a.go" contains "package a\n\nfunc A() int { return 1 }\n"
    And the file "docs/readme.md" contains "a readme\n"
    When I run "plan cat <two> src/a.go"
    Then it succeeds
    And stdout contains "return 3"

  Scenario: gc --aggressive says in words what it repacked, and a second one keeps the packs it cannot better
    Given an initialised workspace
    And 3 checkpoints of 10 files that grow by appends
    When I run "plan gc --aggressive"
    Then it succeeds
    And stdout contains "Repacked"
    And stdout contains "bundles"
    When I run "plan gc --aggressive"
    Then it succeeds
    And stdout contains "Reclaimed 0 B"
    And stdout contains "Repacking would not make the store smaller"
    And stdout contains "the old packs are kept"
    When I run "plan gc --aggressive --json"
    Then it succeeds
    And the JSON output has "repack.bundles" greater than 0
    And the JSON output has "repack.kept" equal to "true"
    And the JSON output has "repack.packs_deleted" equal to "0"
    And the JSON output has "bytes_reclaimed" equal to "0"
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "objects_reencoded" equal to "0"
    And the JSON output has "packs_deleted" equal to "0"

  Scenario Outline: gc --aggressive killed at a step of its repack loses nothing, and the next one completes
    Given an initialised workspace
    And 4 checkpoints of 15 files that grow by appends
    When I run "plan gc --aggressive" with the failpoint "<step>"
    Then the process was killed
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan gc --aggressive --json"
    Then it succeeds
    And the JSON output has "repack.bundles" greater than 0
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan doctor"
    Then it succeeds

    Examples:
      | step                 |
      | store.pack-installed |
      | gc.repacked          |
      | gc.intent            |
      | gc.deleted-one       |

  Scenario: gc --aggressive on a shared store is refused before anything is done
    Given a workspace
    And a shared store in a directory
    When I run "plan init --store <store>"
    Then it succeeds
    Given a file "a.txt" containing "one\n"
    And a checkpoint "one"
    When I run "plan gc --aggressive"
    Then the exit code is 3
    And stderr contains "private store only"
    When I run "plan verify --read-data"
    Then it succeeds

  Scenario: gc --aggressive takes no argument
    Given an initialised workspace
    When I run "plan gc --aggressive now"
    Then the exit code is 2
    And stderr contains "unexpected argument"
