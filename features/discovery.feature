Feature: Workspace discovery
  Run from a subdirectory, plan works on the nearest enclosing workspace, as git finds .git. `-C DIR`
  means "as if started in DIR": DIR is where the search starts, and relative paths are taken from it.
  `plan init` inside a workspace says so instead of silently nesting a second one.

  Background:
    Given an initialised workspace
    And a file "src/deep/f.txt" containing "one\n"
    And a checkpoint "first"

  Scenario: commands run in a subdirectory work on the enclosing workspace
    When I change "src/deep/f.txt" to "two\n"
    And I run "plan -C src/deep diff <first> --name-only"
    Then it succeeds
    And stdout is:
      """
      src/deep/f.txt
      """
    When I run "plan -C src/deep cat <first> f.txt"
    Then it succeeds
    And stdout is:
      """
      one
      """

  Scenario: a path is taken from the directory the command started in
    When I change "src/deep/f.txt" to "two\n"
    And I run "plan -C src/deep --yes rollback --to-checkpoint <first> -- f.txt"
    Then it succeeds
    And the file "src/deep/f.txt" contains "one\n"

  Scenario: a checkpoint taken from a subdirectory records the whole workspace
    Given a file "top.txt" containing "top\n"
    When I run "plan -C src --json checkpoint create" and remember the checkpoint as "from-sub"
    And I run "plan ls <from-sub>"
    Then stdout contains "top.txt"

  Scenario: init inside a workspace is refused, and --nested makes one anyway
    When I run "plan -C src init"
    Then the exit code is 5
    And stderr contains "is inside the workspace"
    And "src/.plan" does not exist
    When I run "plan -C src init --nested"
    Then it succeeds
    And "src/.plan" is a directory
