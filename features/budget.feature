Feature: A per-workspace quota on a shared store
  On a shared store, `store.workspace_max_bytes` bounds what this workspace's checkpoints reference:
  past it, its oldest checkpoints nothing needs are pruned (the store's gc frees their content after
  its grace period). `store.max_bytes` bounds the whole store, which other workspaces fill too: on a
  shared store it only warns.

  Background:
    Given a workspace
    And a shared store in a directory
    When I run "plan init --store <store>"
    Then it succeeds

  Scenario: a checkpoint past the workspace's quota prunes its oldest checkpoints
    Given the workspace's configuration also says:
      """
      store:
        workspace_max_bytes: 150KiB
      """
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "one"
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "two"
    And a file "data.bin" of 60000 bytes of random data
    When I run "plan checkpoint create --note three"
    Then it succeeds
    And stderr contains "this workspace went over its quota of the shared store: pruned the"
    When I run "plan checkpoint list --json"
    Then the JSON output has no "" item whose "note" starts with "one"
    And the JSON output has "0.note" equal to "three"
    When I run "plan stats --json"
    Then the JSON output has "budget.max_bytes" equal to "153600"
    And the JSON output has "budget.over" equal to "false"
    When I run "plan verify --read-data"
    Then it succeeds

  Scenario: store.max_bytes on a shared store warns and prunes nothing
    Given the workspace's configuration also says:
      """
      store:
        max_bytes: 50KiB
      """
    And a file "data.bin" of 60000 bytes of random data
    And a checkpoint "one"
    And a file "data.bin" of 60000 bytes of random data
    When I run "plan checkpoint create --note two"
    Then it succeeds
    And stderr contains "a shared store is not pruned by store.max_bytes"
    When I run "plan checkpoint list --json"
    Then the JSON output lists 2 items

  Scenario: a quota that is not a size is refused by stats
    Given the workspace's configuration also says:
      """
      store:
        workspace_max_bytes: -1
      """
    When I run "plan stats"
    Then the exit code is 3
    And stderr contains "store.workspace_max_bytes"
