Feature: Retiring a workspace of a shared store
  Every `plan clone` adds a workspace to a shared store for good. `plan workspaces retire ID`
  says one is no longer used: it is no longer listed (`plan workspaces --all` still shows it,
  with when it was retired), every plan command in its directory refuses to run, and gc keeps
  only its pinned checkpoints of its own; what other workspaces still need (a clone's first
  checkpoint holds the tree it was cloned from) stays. A workspace whose directory may still be
  in use is retired only with consent (the global --yes, or `y` at the prompt).

  Background:
    Given a workspace
    And a shared store in a directory
    And a file "a.txt" containing "alpha"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    And a checkpoint "one"

  Scenario: a clone whose directory is gone is retired without a question, once
    When I run "plan --json clone --store <store> --workspace <source> <outside>/copy"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "copy"
    When I delete "<outside>/copy"
    And I run "plan --json workspaces retire <copy> --store <store>"
    Then it succeeds
    And the JSON output has "workspace_id" equal to "<copy>"
    And the JSON output has "already_retired" equal to "false"
    And the JSON output has "directory" equal to "gone"
    When I run "plan --json workspaces --store <store>"
    Then it succeeds
    And the JSON output lists 1 items
    And the JSON output has "0.workspace_id" equal to "<source>"
    When I run "plan --json workspaces --store <store> --all"
    Then it succeeds
    And the JSON output lists 2 items
    And the JSON output has "" including:
      | workspace_id | checkpoints |
      | <source>     | 1           |
      | <copy>       | 2           |
    When I run "plan workspaces --store <store> --all"
    Then it succeeds
    And stdout contains "(retired "
    When I run "plan --json workspaces retire <copy> --store <store>"
    Then it succeeds
    And the JSON output has "already_retired" equal to "true"
    When I run "plan workspaces retire <copy> --store <store>"
    Then it succeeds
    And stdout contains "was already retired"

  Scenario: a workspace still in use is retired only with consent, and then refuses every command
    When I run "plan workspaces retire <source> --store <store> -C <outside>"
    Then the exit code is 2
    And stderr contains "pass --yes"
    When I will answer "n"
    And I run "plan workspaces retire <source> --store <store> -C <outside>"
    Then the exit code is 8
    And stderr contains "still in use in"
    When I run "plan --json workspaces --store <store>"
    Then the JSON output lists 1 items
    When I will answer "y"
    And I run "plan workspaces retire <source> --store <store> -C <outside>"
    Then it succeeds
    And stdout contains "Retired workspace <source>"
    When I run "plan checkpoint list"
    Then the exit code is 5
    And stderr contains "was retired from the store"
    And stderr contains "plan init --store"
    When I run "plan checkpoint create"
    Then the exit code is 5
    When I run "plan --json workspaces --store <store>"
    Then it succeeds
    And the JSON output lists 0 items

  Scenario: a retired workspace's checkpoints stay while a clone needs them, and only its pinned ones can be cloned
    When I run "plan checkpoint pin <one>"
    Then it succeeds
    When I change "a.txt" to "beta"
    And I run "plan --json checkpoint create"
    Then it succeeds
    And I remember the JSON output "id" as "two"
    When I run "plan --json clone --store <store> --workspace <source> --checkpoint <two> <outside>/copy"
    Then it succeeds
    When I run "plan --yes --json workspaces retire <source> --store <store> -C <outside>"
    Then it succeeds
    And the JSON output has "directory" equal to "live"
    When I run "plan -C <outside>/copy gc --grace 0s"
    Then it succeeds
    When I run "plan -C <outside>/copy verify --read-data"
    Then it succeeds
    When I run "plan clone --store <store> --workspace <source> --checkpoint <two> <outside>/again"
    Then the exit code is 4
    And stderr contains "keeps only its pinned checkpoints"
    And "<outside>/again" does not exist
    When I run "plan --json clone --store <store> --workspace <source> <outside>/pinned"
    Then it succeeds
    And the JSON output has "source_checkpoint_id" equal to "<one>"
    And "<outside>/pinned/a.txt" exists

  Scenario Outline: retiring is refused when <case>, and nothing is written
    When I run "plan workspaces retire <args>"
    Then the exit code is <code>
    And stderr contains "<why>"
    When I run "plan --json workspaces --store <store> --all"
    Then the JSON output lists 1 items

    Examples:
      | case                     | args                                             | code | why                     |
      | the ID is unknown        | 0123456789abcdef01234567 --store <store>         | 4    | holds no workspace      |
      | the ID is malformed      | not-an-id --store <store>                        | 3    | malformed workspace ID  |
      | no ID is given           | --store <store>                                  | 2    | exactly one argument    |
      | two IDs are given        | <source> <source> --store <store>                | 2    | exactly one argument    |
      | it is still in use here  | <source>                                         | 5    | is in use               |
      | the store does not exist | <source> --store file:///nowhere/at/all          | 4    | does not exist          |

  Scenario: listing without --store lists the workspaces whose history the data directory keeps
    When I run "plan --json workspaces"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.workspace_id" equal to "<source>"
    And the JSON output has "0.root" equal to "<workspace>"
    And the JSON output has "0.directory" equal to "present"
    And the JSON output has "0.history_dir" equal to "<history>"

  Scenario: on S3 and PostgreSQL, a retired clone is left out of the list the database gives
    Given a shared store in an S3 bucket
    And a shared PostgreSQL database
    And a file "<outside>/s3src/b.txt" containing "beta"
    When I run "plan --json init --store <store> --db <db> -C <outside>/s3src"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "s3src"
    When I run "plan -C <outside>/s3src checkpoint create"
    Then it succeeds
    When I run "plan --json clone --store <store> --db <db> --workspace <s3src> <plans>/copy"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "s3copy"
    When I delete "<plans>/copy"
    And I run "plan --json workspaces retire <s3copy> --store <store> --db <db>"
    Then it succeeds
    When I run "plan --json workspaces --store <store> --db <db>"
    Then it succeeds
    And the JSON output lists 1 items
    And the JSON output has "0.workspace_id" equal to "<s3src>"
    When I run "plan -C <outside>/s3src gc --grace 0s"
    Then it succeeds
    When I run "plan -C <outside>/s3src verify --read-data"
    Then it succeeds
