Feature: Opening a workspace costs little and keeps every guarantee
  Every command opens the store and the database. A read-only command does it without writing to
  the database, so it never waits for another process's write; a database behind the store's
  records is still refused, by reading commands as by writing ones.

  Background:
    Given an initialised workspace
    And a file "src/deep/main.go" containing "package main"
    And a file "README.md" containing "hello"
    And a checkpoint "first"

  Scenario: Read-only commands read while another process writes to the database
    Given another process holds the metadata database's write lock
    When I run "plan checkpoint list"
    Then it succeeds
    And stdout contains "<first>"
    When I run "plan --json history --limit 1"
    Then it succeeds
    And stdout contains "\"outcome\": \"ok\""
    When I run "plan cat @ README.md"
    Then it succeeds
    And stdout contains "hello"
    When I run "plan ls @ src"
    Then it succeeds
    And stdout contains "deep"
    When the other process releases the metadata database's write lock
    And I run "plan --json checkpoint create --note after"
    Then it succeeds

  Scenario: A database that lost a recorded transaction is refused by a read-only command
    Given the metadata database loses its newest recorded transaction
    When I run "plan checkpoint list"
    Then the exit code is 6
    And stderr contains "behind the store"
    And stderr contains "plan doctor --rebuild"
    When I run "plan doctor --rebuild"
    Then it succeeds
    When I run "plan checkpoint list"
    Then it succeeds
    And stdout contains "<first>"

  Scenario: The manual page is roff made from the command definitions
    When I run "plan man"
    Then it succeeds
    And stdout contains ".TH plan 1"
    And stdout contains "\fB--store\fP=URL: keep content in a shared store"
    And stdout contains "s3://bucket[/prefix]"
    And stdout contains ".SS \"plan checkpoint create [OPTIONS]\""
    And stdout contains "\fB130\fP: interrupted"
    When I run "plan man extra"
    Then the exit code is 2

  Scenario: ls of a directory lists what it holds directly, the newest checkpoint by @
    Given a file "src/deep/inner/more.go" containing "package inner"
    And a checkpoint "second"
    When I run "plan ls @ src"
    Then it succeeds
    And stdout contains "src/deep/"
    And stdout does not contain "main.go"
    When I run "plan ls -r @ src"
    Then it succeeds
    And stdout contains "src/deep/inner/more.go"
    When I run "plan ls @ src/nope"
    Then the exit code is 4
