Feature: Shared stores
  A workspace can keep its content in a store several workspaces share (a directory, or an
  S3-compatible bucket) and its metadata in a database they share (PostgreSQL), so checkpoints
  outlive the machine that took them: `plan init --store URL --db DSN` makes such a workspace,
  `plan workspaces` lists what a store holds, `plan clone` materialises any workspace's checkpoint
  into an empty directory as a new workspace, and `plan gc` collects the store without a lock in
  common with the other workspaces' writers.

  Scenario: init on a shared store records where the workspace lives, and says so
    Given a workspace
    And a shared store in a directory
    When I run "plan --json init --store <store>"
    Then it succeeds
    And the JSON output has "created" equal to "true"
    And the JSON output has "store" equal to "<store>"
    And the JSON output has "db" equal to ""
    And the JSON output has "workspace_id" matching "^[0-9a-f]{24}$"
    And I remember the JSON output "workspace_id" as "ws"
    When I run "plan --json init"
    Then it succeeds
    And the JSON output has "created" equal to "false"
    And the JSON output has "workspace_id" equal to "<ws>"
    When I run "plan init --store file:///somewhere/else"
    Then the exit code is 5
    And stderr contains "its store cannot change"

  Scenario Outline: a store URL or database DSN plan cannot use is invalid input, and nothing is made
    Given a workspace
    When I run "plan init <flags>"
    Then the exit code is 3
    And stderr contains "<why>"
    And ".plan" does not exist

    Examples:
      | flags                        | why                                  |
      | --store http://example.com/x | want file:///absolute/path or s3://  |
      | --store file://relative/path | want file:///absolute/path           |
      | --store s3://                | want s3://bucket                     |
      | --store s3://ab              | Bucket name cannot be shorter        |
      | --store s3://a..b/team       | Bucket name contains invalid         |
      | --db mysql://u@h/d           | want sqlite:///absolute/path or post |
      | --db sqlite://relative.db    | want sqlite:///absolute/path         |

  Scenario: two workspaces share one store: each is listed with its own checkpoints
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "first"
    When I run "plan checkpoint create"
    Then it succeeds
    When I run "plan --json init --store <store> -C <outside>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "second"
    When I run "plan --json workspaces --store <store>"
    Then it succeeds
    And the JSON output lists 2 items
    And the JSON output has "" including:
      | workspace_id | checkpoints |
      | <first>      | 1           |
      | <second>     | 0           |
    When I run "plan workspaces --store <store>"
    Then it succeeds
    And stdout contains "<first>"
    And stdout contains "<second>"

  Scenario: a clone reproduces a checkpoint byte for byte, and its history starts there
    Given a workspace
    And a shared store in a directory
    And a file "src/main.go" containing "package main\n"
    And an executable file "run.sh" containing "#!/bin/sh\necho hi\n"
    And a symlink "latest" pointing to "src/main.go"
    And an empty directory "empty"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "first"
    When I change "src/main.go" to "package main // changed\n"
    And I run "plan checkpoint create --note second"
    Then it succeeds
    When I run "plan --json clone --store <store> --workspace <source> --checkpoint <first> <outside>/copy"
    Then it succeeds
    And the JSON output has "source_checkpoint_id" equal to "<first>"
    And the JSON output has "files" equal to "3"
    And I remember the JSON output "checkpoint_id" as "cloned"
    And "<outside>/copy" equals the workspace remembered as "first"
    When I run "plan --json -C <outside>/copy checkpoint list"
    Then it succeeds
    And the JSON output has "1.id" equal to "<cloned>"
    And the JSON output has "1.type" equal to "clone"
    When I run "plan --json -C <outside>/copy diff <cloned>"
    Then it succeeds
    And the JSON output has 0 "changes"

  Scenario Outline: a clone is refused when <case>, and makes nothing
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    When I run "plan checkpoint create"
    Then it succeeds
    When I run "plan clone --store <store> --workspace <source> <outside>/full"
    Then it succeeds
    When I run "plan clone --store <store> <args>"
    Then the exit code is <code>
    And stderr contains "<why>"
    And "<outside>/new/.plan" does not exist

    Examples:
      | case                                 | args                                                            | code | why                         |
      | the directory is not empty           | --workspace <source> <outside>/full                             | 5    | is not empty                |
      | the workspace is unknown             | --workspace 0123456789abcdef01234567 <outside>/new              | 4    | holds no workspace          |
      | the checkpoint is unknown            | --workspace <source> --checkpoint abcdef012345 <outside>/new    | 4    | not found                   |
      | the workspace ID is malformed        | --workspace nope <outside>/new                                  | 3    | malformed workspace ID      |
      | no directory is given                | --workspace <source>                                            | 2    | exactly one argument        |
      | no source workspace is given         | <outside>/new                                                   | 2    | missing --from              |
      | the source is given twice            | --from <source> --workspace <source> <outside>/new              | 2    | two forms of the same flag  |

  Scenario: gc of a shared store condemns first and deletes after the grace period, keeping what any workspace needs
    Given a workspace
    And a shared store in a directory
    And a file "big.bin" of 300000 bytes of random data
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "old"
    When I delete "big.bin"
    And a checkpoint "new"
    When I run "plan --json clone --store <store> --workspace <source> --checkpoint <old> <outside>/other"
    Then it succeeds
    When I run "plan checkpoint delete <old>"
    Then it succeeds
    When I wait 1.2 seconds
    And I run "plan --json gc --grace 1s"
    Then it succeeds
    And the JSON output has "shared.packs_condemned" equal to "0"
    When I run "plan --json -C <outside>/other checkpoint list"
    Then it succeeds
    And I remember the JSON output "1.id" as "theirs"
    When I run "plan -C <outside>/other checkpoint delete <theirs>"
    Then it succeeds
    When I run "plan --json gc --grace 1s"
    Then it succeeds
    And the JSON output has "shared.packs_condemned" greater than 0
    And the JSON output has "shared.marks_pending" equal to "1"
    And the JSON output has "packs_deleted" equal to "0"
    When I wait 1.2 seconds
    And I run "plan --json gc --grace 1s"
    Then it succeeds
    And the JSON output has "packs_deleted" greater than 0
    And the JSON output has "shared.marks_pending" equal to "0"
    When I run "plan verify --read-data"
    Then it succeeds
    When I run "plan rollback --to-checkpoint <new> --yes"
    Then it succeeds
    And the workspace equals "new"

  Scenario: a bad --grace is invalid input
    Given an initialised workspace
    When I run "plan gc --grace soon"
    Then the exit code is 3
    And stderr contains "--grace"

  Scenario: a workspace on S3 and PostgreSQL: checkpoints, a clone elsewhere, the cache, and the list from the database
    Given a workspace
    And a shared store in an S3 bucket
    And a shared PostgreSQL database
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store> --db <db>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"
    When I run "plan --json clone --store <store> --db <db> --workspace <source> <outside>/elsewhere"
    Then it succeeds
    And "<outside>/elsewhere" equals the workspace remembered as "one"
    When I run "plan --json workspaces --store <store> --db <db>"
    Then it succeeds
    And the JSON output lists 2 items
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "store" equal to "<store>"
    And the JSON output has "cache.limit_bytes" greater than 0
    When I run "plan stats"
    Then it succeeds
    And stdout contains "local cache"
    When I run "plan doctor"
    Then it succeeds

  Scenario: the configuration bounds an S3 store's local cache
    Given a workspace
    And a shared store in an S3 bucket
    When I run "plan init --store <store>"
    Then it succeeds
    Given the workspace's configuration also says:
      """
      cache:
        max_bytes: 50MB
      """
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "cache.limit_bytes" equal to "50000000"
    Given the workspace's configuration also says:
      """
      gc:
        grace: 1m
      """
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "cache.limit_bytes" equal to "50000000"

  Scenario: a cache bound that is no size is invalid input naming the setting
    Given a workspace
    And a shared store in an S3 bucket
    When I run "plan init --store <store>"
    Then it succeeds
    Given the workspace's configuration also says:
      """
      cache:
        max_bytes: lots
      """
    When I run "plan stats"
    Then the exit code is 3
    And stderr contains "cache.max_bytes"

  Scenario: an S3 endpoint that does not answer is "unavailable", and nothing changes
    Given a workspace
    And a shared store in an S3 bucket
    And a file "a.txt" containing "alpha"
    When I run "plan init --store <store>"
    Then it succeeds
    And a checkpoint "before"
    Given the S3 endpoint does not answer
    When I change "a.txt" to "beta"
    And I run "plan --json checkpoint create"
    Then the exit code is 1
    And the JSON error has "error.kind" equal to "unavailable"
    And the JSON error has "error.message" containing "does not answer"
    When I run "plan --json rollback --to-checkpoint <before> --yes"
    Then the exit code is 1
    And the JSON error has "error.kind" equal to "unavailable"
    And the file "a.txt" contains "beta"

  Scenario: a database that does not answer is "unavailable", and nothing changes
    Given a workspace
    And a shared store in a directory
    And a shared PostgreSQL database
    And a file "a.txt" containing "alpha"
    When I run "plan init --store <store> --db <db>"
    Then it succeeds
    And a checkpoint "before"
    Given the database does not answer
    When I change "a.txt" to "beta"
    And I run "plan --json rollback --to-checkpoint <before> --yes"
    Then the exit code is 1
    And the JSON error has "error.kind" equal to "unavailable"
    And the file "a.txt" contains "beta"
    When I run "plan --json doctor"
    Then the exit code is 6
    And the JSON output has "findings" including:
      | check    | ok    |
      | database | false |
    And stdout contains "make the database server reachable"
    When I run "plan --json workspaces --store <store> --db <db>"
    Then it succeeds

  Scenario: gc of a shared store keeps the grace period the configuration sets, and says what it did
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan init --store <store>"
    Then it succeeds
    And a checkpoint "one"
    Given the workspace's configuration also says:
      """
      gc:
        grace: 10m
      """
    When I run "plan checkpoint delete <one>"
    Then it succeeds
    When I run "plan --json gc"
    Then it succeeds
    And the JSON output has "shared.grace_seconds" equal to "600"
    And the JSON output has "shared.packs_condemned" equal to "0"
    When I run "plan gc"
    Then it succeeds
    And stdout contains "0 packs condemned now, deleted by a gc after 10m0s if still unused"
    When I run "plan stats"
    Then it succeeds
    And stdout contains "shared store"

  Scenario: plan workspaces in text, and what it cannot list
    Given a workspace
    And a shared store in a directory
    When I run "plan workspaces --store <store>"
    Then the exit code is 4
    And stderr contains "does not exist"
    When I run "plan workspaces --store file://<outside>"
    Then it succeeds
    And stdout contains "holds no workspace"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "ws"
    When I run "plan workspaces --store <store> extra"
    Then the exit code is 2
    Given the store's descriptor of workspace "ws" is removed
    When I run "plan --json workspaces --store <store>"
    Then it succeeds
    And the JSON output has "0.workspace_id" equal to "<ws>"
    And the JSON output has "0.root" equal to ""
    When I run "plan workspaces --store <store>"
    Then it succeeds
    And stdout contains "<ws>  -"
    When I run "plan --json init"
    Then it succeeds
    Given the store's descriptor of workspace "ws" is damaged
    When I run "plan --json workspaces --store <store>"
    Then the exit code is 6
    And the JSON error has "error.message" containing "descriptor"

  Scenario: a clone into a relative directory, and from a store that is not there
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"
    When I run "plan clone --store file://<outside>/nowhere --workspace <source> <outside>/new"
    Then the exit code is 4
    And stderr contains "does not exist"
    And "<outside>/new" does not exist
    When I run "plan clone --store <store> --workspace <source> ../outside/copy"
    Then it succeeds
    And stdout contains "Cloned checkpoint <one>"
    And "<outside>/copy" equals the workspace remembered as "one"

  Scenario: clone's --from names the source workspace, never the directory the global --workspace (-C) names
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"
    When I run "plan -C <outside> clone --store <store> --from <source> copy"
    Then it succeeds
    And "<outside>/copy" equals the workspace remembered as "one"

  Scenario: a clone whose content is damaged fails with an integrity error and says how to finish it
    Given a workspace
    And a shared store in a directory
    And a file "big.bin" of 300000 bytes of random data
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"
    When I flip a byte in the middle of every pack of the shared store
    And I run "plan clone --store <store> --workspace <source> <outside>/copy"
    Then the exit code is 6
    And stderr contains "the rollback stays journaled: `plan recover` finishes it"
    And "<outside>/copy/big.bin" does not exist
    When I run "plan -C <outside>/copy checkpoint list"
    Then stderr contains "an interrupted rollback"
    And stderr contains "run `plan recover`"

  Scenario: through a shared database, a store's view clones only the workspaces whose content it holds
    Given a workspace
    And a shared store in a directory
    And a shared PostgreSQL database
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --db <db>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "private"
    And a checkpoint "one"
    When I run "plan --json init --store <store> -C <outside>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "local"
    When I run "plan -C <outside> checkpoint create"
    Then it succeeds
    When I run "plan clone --store <store> --db <db> --workspace <private> <plans>/copy"
    Then the exit code is 4
    And stderr contains "holds no workspace"
    And "<plans>/copy" does not exist
    When I run "plan --json clone --store <store> --db <db> --workspace <local> <plans>/copy"
    Then it succeeds
    And the JSON output has "source_workspace_id" equal to "<local>"

  Scenario: a workspace on PostgreSQL whose database lost its tables is rebuilt in place from its records
    Given a workspace
    And a shared store in a directory
    And a shared PostgreSQL database
    And a file "a.txt" containing "alpha"
    And I remember the shared database's DSN with its password as "dsn"
    When I run "plan init --store <store> --db <dsn>"
    Then it succeeds
    And stdout contains "the database password was not recorded"
    And stdout does not contain the database password
    And a checkpoint "one"
    When I run "plan doctor --rebuild"
    Then it succeeds
    And stdout contains "healthy"
    And stdout does not contain the database password
    Given the shared database loses every table
    When I run "plan --json doctor"
    Then the exit code is 6
    And the JSON output has "findings" including:
      | check    | ok    |
      | database | false |
    And stdout contains "rebuilds this workspace's rows from the store's records, in place"
    When I run "plan doctor --rebuild"
    Then it succeeds
    And stdout contains "Rebuilt"
    And stdout contains "1 checkpoints"
    And stdout does not contain the database password
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output has "0.id" equal to "<one>"
    When I run "plan doctor"
    Then it succeeds

  Scenario: a clone of a checkpoint whose content is gone from the store fails, says so, and leaves nothing in the way of the next attempt
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"
    When I delete every pack of the shared store
    And I run "plan --json clone --store <store> --workspace <source> <outside>/copy"
    Then the exit code is 6
    And the JSON error has "error.message" containing "clone checkpoint <one> of workspace <source>"
    And the JSON error has "error.message" containing "missing"
    And "<outside>/copy" does not exist
    When I run "plan --json clone --store <store> --workspace <source> <outside>"
    Then the exit code is 6
    And the outside directory is empty
