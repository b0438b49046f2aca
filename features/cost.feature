Feature: The fixed cost of a command
  A command pays for starting, opening the store and the database, the lock and its commit whatever
  it changes; PLAN_TIMINGS=1 says where that time went, and a checkpoint commits with its log entry
  as one durable write.

  Background:
    Given an initialised workspace
    And a file "src/deep/main.go" containing "package main"
    And a file "README.md" containing "hello"

  Scenario: A no-change checkpoint and its log entry are one transaction
    Given a checkpoint "first"
    When I run "plan --json checkpoint create --note again" and remember the checkpoint as "again"
    And I run "plan --json history --limit 1"
    Then it succeeds
    And the JSON output lists 1 item
    And stdout contains "<again>"
    And stdout contains "\"outcome\": \"ok\""

  Scenario: PLAN_TIMINGS=1 reports the phases of a command on stderr, and nothing else changes
    Given the environment sets PLAN_TIMINGS to "1"
    When I run "plan --json checkpoint create"
    Then it succeeds
    And stderr contains "plan: timings: {"
    And stderr contains "\"open.db.ledger\": "
    And stderr contains "\"lock\": "
    And stderr contains "\"commit.record\": "
    And stdout does not contain "timings"

  Scenario: PLAN_TIMINGS=0 measures nothing
    Given the environment sets PLAN_TIMINGS to "0"
    When I run "plan checkpoint list"
    Then it succeeds
    And stderr does not contain "timings"

  Scenario: cat and ls read the path asked for
    Given a checkpoint "first"
    When I run "plan cat @ src/deep/main.go"
    Then it succeeds
    And stdout contains "package main"
    When I run "plan ls -r @ src"
    Then it succeeds
    And stdout contains "src/deep/main.go"

  Scenario: cat of a path the checkpoint does not hold is not found
    Given a checkpoint "first"
    When I run "plan cat @ src/nope/main.go"
    Then the exit code is 4
    And stderr contains "has no src/nope/main.go"
    When I run "plan cat @ README.md/below"
    Then the exit code is 4
    When I run "plan cat @ ../outside"
    Then the exit code is 3

  Scenario: a read-only command does not fail on a damaged pack index it does not read
    Given a checkpoint "first"
    And I empty every pack index file
    When I run "plan checkpoint list"
    Then it succeeds
    When I run "plan cat @ README.md"
    Then the exit code is 6
    And stderr contains "doctor --repair"
