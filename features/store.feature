Feature: Store health
  Months of checkpoints must stay manageable and trustworthy: `plan checkpoint prune` deletes old
  checkpoints (never one a live decision still needs), `plan gc` reclaims their space, `plan verify`
  finds damaged or missing data (exit 6), `plan stats` reports sizes and timings, and `plan doctor`
  checks the database and the store and says how to repair them.

  Background:
    Given an initialised workspace

  Scenario: prune --dry-run lists what it would delete and changes nothing
    Given 12 checkpoints "c" of a changing tree
    When I run "plan checkpoint prune --keep 3 --dry-run --json"
    Then it succeeds
    And the JSON output has 9 "deleted"
    And the JSON output has "kept" equal to "["<c12>","<c11>","<c10>"]"
    And the JSON output has "deleted" equal to "["<c9>","<c8>","<c7>","<c6>","<c5>","<c4>","<c3>","<c2>","<c1>"]"
    And the JSON output has "dry_run" equal to "true"
    And the workspace equals "c12"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 12 items
    When I run "plan checkpoint show <c1>"
    Then it succeeds

  Scenario: prune deletes the old checkpoints, gc reclaims their space, and the kept ones still roll back exactly
    Given 12 checkpoints "c" of a changing tree
    When I run "plan checkpoint prune --keep 3 --json"
    Then it succeeds
    And the JSON output has 9 "deleted"
    And the JSON output has "kept" equal to "["<c12>","<c11>","<c10>"]"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 3 items
    And the JSON output has "0.id" equal to "<c12>"
    And the JSON output has "2.id" equal to "<c10>"
    When I run "plan checkpoint show <c9>"
    Then the exit code is 4
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "bytes_reclaimed" greater than 0
    When I run "plan gc --json"
    Then it succeeds
    And the JSON output has "bytes_reclaimed" equal to "0"
    When I run "plan verify --read-data --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    And the JSON output has "checked_checkpoints" equal to "3"
    When I run "plan rollback --to-checkpoint <c10> --yes"
    Then it succeeds
    And the workspace equals "c10"
    When I run "plan rollback --to-checkpoint <c11> --yes"
    Then it succeeds
    And the workspace equals "c11"
    When I run "plan rollback --to-checkpoint <c12> --yes"
    Then it succeeds
    And the workspace equals "c12"

  Scenario: gc keeps what a correction of an earlier plan archives, not only the plan run last
    Given a plan file "first.yaml" with:
      """
      name: first
      decisions:
        - id: data
          run: head -c 300000 /dev/urandom > data.bin
      """
    And a plan file "second.yaml" with:
      """
      name: second
      decisions:
        - id: other
          run: echo other > other.txt
      """
    When I run "plan run <plans>/first.yaml"
    Then it succeeds
    When I change "data.bin" to "small"
    And I run "plan run <plans>/second.yaml"
    Then it succeeds
    When I run "plan gc --json"
    Then it succeeds
    When I run "plan --json correct --plan first --decision data --reason 'keep its output' --no-reexecute --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan verify --read-data --json"
    Then it succeeds
    And "data.bin" does not exist

  Scenario: prune keeps the pre_decision checkpoints of live decisions beyond --keep, and says why
    Given a plan file "plan.yaml" with:
      """
      name: site
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
      """
    And I run "plan --json run <plans>/plan.yaml"
    And it succeeds
    And I remember the JSON output "end_checkpoint_id" as "end"
    And I run "plan status --json"
    And it succeeds
    And I remember the JSON output "decisions.0.checkpoint_id" as "cp-one"
    And I remember the JSON output "decisions.1.checkpoint_id" as "cp-two"
    And 3 checkpoints "m" of a changing tree
    When I run "plan checkpoint prune --keep 1 --json"
    Then it succeeds
    And the JSON output has "deleted" equal to "["<m2>","<m1>","<end>"]"
    And the JSON output has "kept" equal to "["<m3>","<cp-two>","<cp-one>"]"
    And the JSON output has "reasons.<cp-one>" containing "live decision one"
    And the JSON output has "reasons.<cp-two>" containing "live decision two"
    When I run "plan checkpoint prune --keep 1"
    Then it succeeds
    And stdout contains "kept <cp-one>: pre_decision checkpoint of live decision one"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 3 items
    When I run "plan correct --decision one --reason 'still correctable' --no-reexecute --yes"
    Then it succeeds
    And "one.txt" does not exist
    And "two.txt" does not exist

  Scenario: prune --older-than deletes nothing that was just created
    Given 4 checkpoints "c" of a changing tree
    When I run "plan checkpoint prune --keep 0 --older-than 1h --json"
    Then it succeeds
    And the JSON output has 0 "deleted"
    And the JSON output has 4 "kept"
    And the JSON output has "reasons.<c1>" equal to "newer than --older-than"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 4 items

  Scenario: an empty --older-than is invalid input, never "no age condition"
    Given 2 checkpoints "c" of a changing tree
    When I run "plan checkpoint prune --keep 0 --older-than ''"
    Then the exit code is 3
    And stderr contains "--older-than"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 2 items

  Scenario: prune needs --keep
    When I run "plan checkpoint prune"
    Then the exit code is 2
    And stderr contains "--keep"

  Scenario: a healthy store verifies
    Given a file "a.txt" containing "hello\n"
    And a file "data.bin" of 65536 bytes of random data
    And a checkpoint "one"
    And I change "a.txt" to "changed\n"
    And a checkpoint "two"
    When I run "plan verify --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    And the JSON output has "checked_checkpoints" equal to "2"
    And the JSON output has 0 "problems"
    When I run "plan verify --read-data --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    When I run "plan verify <two>"
    Then it succeeds

  Scenario: a flipped byte in a pack is found by verify --read-data, which names the checkpoint it damages
    Given a file "a.txt" containing "hello\n"
    And a file "one.bin" of 65536 bytes of random data
    And a checkpoint "one"
    And a file "two.bin" of 65536 bytes of random data
    And a checkpoint "two"
    When I flip a byte in the middle of the pack checkpoint "two" wrote
    And I run "plan verify --read-data --json"
    Then the exit code is 6
    And the JSON output has "ok" equal to "false"
    And the JSON output has "problems" with exactly:
      | checkpoint_id | path    |
      | <two>         | two.bin |
      | null          | (set)   |
    And the JSON output has "problems.0.problem" containing "does not match its hash"
    And the JSON error has "error.kind" equal to "integrity"
    When I run "plan verify --read-data --json <one>"
    Then it succeeds

  Scenario: damage to content two checkpoints share is reported for both
    Given a file "a.txt" containing "hello\n"
    And a file "one.bin" of 65536 bytes of random data
    And a checkpoint "one"
    And a file "two.bin" of 65536 bytes of random data
    And a checkpoint "two"
    When I flip a byte in the middle of the pack checkpoint "one" wrote
    And I run "plan verify --read-data --json"
    Then the exit code is 6
    And the JSON output has "problems" with exactly:
      | checkpoint_id | path    |
      | <one>         | one.bin |
      | <two>         | one.bin |
      | null          | (set)   |

  Scenario: a deleted pack fails verify
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    And a file "two.bin" of 65536 bytes of random data
    And a checkpoint "two"
    When I delete the pack checkpoint "two" wrote
    And I run "plan verify --json"
    Then the exit code is 6
    And the JSON output has "ok" equal to "false"
    And the JSON output has "problems" with exactly:
      | checkpoint_id |
      | <two>         |
    And the JSON output has "problems.0.problem" containing "missing"

  Scenario: a truncated pack fails verify
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    And a file "two.bin" of 65536 bytes of random data
    And a checkpoint "two"
    When I truncate to half its size the pack checkpoint "two" wrote
    And I run "plan verify --json"
    Then the exit code is 6
    And the JSON output has "problems" with exactly:
      | checkpoint_id |
      | <two>         |
    When I run "plan verify --read-data"
    Then the exit code is 6
    And stdout contains "<two>"

  Scenario Outline: a checkpoint never deduplicates onto a copy that is <damage>: it stores the live file afresh
    Given a file "a.txt" containing "hello\n"
    And a file "big.bin" of 65536 bytes of random data
    And a checkpoint "one"
    When I <action> the pack checkpoint "one" wrote
    And I run "plan verify --read-data"
    Then the exit code is 6
    When I run "plan --json checkpoint create --note again"
    Then it succeeds
    And the JSON output has "stored_bytes" greater than 60000
    And I remember the JSON output "id" as "again"
    When I run "plan verify --read-data <again>"
    Then it succeeds
    When I delete "big.bin"
    And I run "plan rollback --to-checkpoint <again> --yes"
    Then it succeeds
    And "big.bin" exists

    Examples:
      | damage      | action                       |
      | damaged     | flip a byte in the middle of |
      | gone        | delete                       |
      | cut short   | truncate to half its size    |

  Scenario: a rollback to a damaged checkpoint is refused and leaves the workspace unchanged
    Given a file "a.txt" containing "hello\n"
    And a file "two.bin" of 65536 bytes of random data
    And a checkpoint "two"
    When I change "a.txt" to "changed\n"
    And I delete "two.bin"
    And a file "new.txt" containing "new\n"
    And I remember the workspace as "changed"
    And I flip a byte in the middle of the pack checkpoint "two" wrote
    And I run "plan rollback --to-checkpoint <two> --yes"
    Then the exit code is 6
    And the workspace equals "changed"
    When I run "plan --json checkpoint show <two>"
    Then it succeeds
    And the JSON output has "rollback_count" equal to "0"

  Scenario: stats reports counts, sizes, deduplication and timings
    Given a file "data.bin" of 65536 bytes of random data
    And a checkpoint "one"
    And a file "small.txt" containing "0123456789"
    And a checkpoint "two"
    When I run "plan stats --json"
    Then it succeeds
    And the JSON output has "checkpoints" equal to "2"
    And the JSON output has "logical_bytes" equal to "131082"
    And the JSON output has "stored_bytes" greater than 65535
    And the JSON output has "dedup_ratio" greater than 1
    And the JSON output has "checkpoint_ms.avg" greater than 0
    And the JSON output has "checkpoint_ms.p95" greater than 0
    When I run "plan stats"
    Then it succeeds
    And stdout contains "dedup ratio"

  Scenario: a healthy workspace passes doctor
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    When I run "plan doctor"
    Then it succeeds
    When I run "plan doctor --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"

  Scenario: a corrupt database is reported as an integrity problem that doctor explains
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    When the database is overwritten with junk
    And I run "plan checkpoint list"
    Then the exit code is 6
    And stderr contains "plan doctor"
    When I run "plan --json checkpoint list"
    Then the exit code is 6
    And the JSON error has "error.kind" equal to "integrity"
    When I run "plan doctor"
    Then the exit code is 6
    And stdout contains "FAIL database"
    And stdout contains "plan doctor --rebuild"
    When I run "plan doctor --rebuild"
    Then it succeeds
    And stdout contains "plan.db.corrupt-"
    When I run "plan --json checkpoint show <one>"
    Then it succeeds

  Scenario: a zero-byte database is an integrity problem, and gc never runs against it
    Given a file "a.txt" containing "hello\n"
    And a file "big.bin" of 200000 bytes of random data
    And a checkpoint "one"
    When the database is truncated to zero bytes
    And I run "plan checkpoint list"
    Then the exit code is 6
    And stderr contains "plan doctor"
    And stdout does not contain "No checkpoints"
    When I run "plan gc"
    Then the exit code is 6
    When I run "plan checkpoint prune --keep 0 --yes"
    Then the exit code is 6
    When I run "plan init"
    Then the exit code is 6
    When I run "plan --json checkpoint create"
    Then the exit code is 6
    And the JSON error has "error.kind" equal to "integrity"

  Scenario: a deleted database with a non-empty store is an integrity problem, not a new workspace
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    When I delete "<history>/plan.db"
    And I run "plan checkpoint list"
    Then the exit code is 6
    And stderr contains "plan doctor"
    And stderr does not contain "run `plan init`"
    When I run "plan init"
    Then the exit code is 6
    And "<history>/plan.db" does not exist
    When I run "plan doctor --json"
    Then the exit code is 6
    And the JSON output has "ok" equal to "false"
    And the JSON output has "findings" including:
      | check    | ok    |
      | database | false |
    And the JSON output has "findings.0.problem" containing "missing"

  Scenario: a lost database is rebuilt from the store's records: history comes back, deletions stay deleted
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    And a plan file "plan.yaml" with:
      """
      name: build
      decisions:
        - id: gen
          run: echo generated > gen.txt
      """
    And I run "plan run <plans>/plan.yaml"
    And a file "b.txt" containing "two\n"
    And a checkpoint "two"
    And a checkpoint "gone"
    And I run "plan checkpoint delete <gone> --yes"
    And I run "plan rollback --to-checkpoint <one> --yes"
    And I run "plan --json checkpoint list"
    And I remember the output as "checkpoints"
    And I run "plan --json status"
    And I remember the output as "status"
    When I delete "<history>/plan.db"
    And I run "plan status"
    Then the exit code is 6
    And stderr contains "plan doctor --rebuild"
    When I run "plan --json doctor --rebuild"
    Then it succeeds
    And the JSON output has "rebuilt" equal to "true"
    And the JSON output has "plans" equal to "1"
    And the JSON output has "decisions" equal to "1"
    When I run "plan --json checkpoint list"
    Then the output equals the one remembered as "checkpoints"
    And the JSON output has no "" item whose "id" starts with "<gone>"
    When I run "plan --json status"
    Then the output equals the one remembered as "status"
    When I run "plan rollback --to-checkpoint <two> --yes"
    Then it succeeds
    And the file "b.txt" contains "two\n"
    When I run "plan doctor --rebuild"
    Then it succeeds
    And stdout contains "nothing to rebuild"

  Scenario: a damaged record is reported, and doctor --repair replaces it from the healthy database
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    When I flip a byte in every record
    And I run "plan --json verify --read-data"
    Then the exit code is 6
    When I run "plan doctor"
    Then the exit code is 6
    And stdout contains "FAIL records"
    When I run "plan doctor --repair"
    Then it succeeds
    When I run "plan verify --read-data"
    Then it succeeds
    When I delete "<history>/plan.db"
    And I run "plan doctor --rebuild"
    Then it succeeds
    When I run "plan --json checkpoint show <one>"
    Then it succeeds

  Scenario: an empty pack index is reported by doctor and repaired by doctor --repair
    Given a file "a.txt" containing "hello\n"
    And a file "data.bin" of 4096 bytes of random data
    And a checkpoint "one"
    When I empty every pack index file
    And I run "plan doctor --json"
    Then the exit code is 6
    And the JSON output has "findings" including:
      | check        | ok    |
      | pack indexes | false |
    And the JSON output has "findings.2.problem" containing "empty index"
    When I run "plan doctor --repair --json"
    Then it succeeds
    And the JSON output has "findings" including:
      | check        | ok   | repaired |
      | pack indexes | true | true     |
    When I run "plan verify --read-data --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    When I run "plan doctor"
    Then it succeeds
    When I change "a.txt" to "changed\n"
    And I run "plan rollback --to-checkpoint <one> --yes"
    Then it succeeds
    And the workspace equals "one"

  Scenario: a retention policy in .plan/config.yaml prunes after plan run
    Given 4 checkpoints "m" of a changing tree
    And the workspace's configuration also says:
      """
      retention: {keep: 2}
      """
    And a plan file "plan.yaml" with:
      """
      name: site
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
        - id: three
          run: echo three > three.txt
      """
    When I run "plan run <plans>/plan.yaml"
    Then it succeeds
    And stderr contains "retention policy pruned 4 checkpoints"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 4 items
    And the JSON output has no "" item whose "type" starts with "manual"
    When I run "plan checkpoint show <m4>"
    Then the exit code is 4

  Scenario: a state directory plan cannot write to is one clear error, and doctor says how to fix it
    Given a file "a.txt" containing "hello\n"
    And a checkpoint "one"
    And I make "<history>" immutable
    When I run "plan checkpoint create"
    Then the exit code is 5
    And stderr contains "cannot write to"
    And stderr does not contain "fx"
    When I run "plan doctor"
    Then the exit code is 6
    And stdout contains "make"
    And stdout does not contain "from a backup"

  Scenario: verify --read-data --repair heals a flipped byte from the workspace's intact file
    Given a file "a.txt" containing "hello\n"
    And a file "data.bin" of 65536 bytes of random data
    And a checkpoint "one"
    When I flip a byte in the middle of the pack checkpoint "one" wrote
    And I run "plan verify --read-data"
    Then the exit code is 6
    When I run "plan --json verify --read-data --repair"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    And the JSON output has 1 "healed"
    When I run "plan verify --read-data"
    Then it succeeds
    When I delete "data.bin"
    And I run "plan rollback --to-checkpoint <one> --yes"
    Then it succeeds
    And "data.bin" exists

  Scenario: --repair without --read-data is a usage error
    When I run "plan verify --repair"
    Then the exit code is 2

  Scenario: doctor --repair heals a flipped byte it finds by itself
    Given a file "data.bin" of 65536 bytes of random data
    And a checkpoint "one"
    When I flip a byte in the middle of the pack checkpoint "one" wrote
    And I run "plan doctor --repair"
    Then it succeeds
    And stdout contains "healed"
    When I run "plan verify --read-data"
    Then it succeeds
