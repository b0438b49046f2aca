Feature: Embedding plan in a Go program
  A host program opens a workspace with plan.Open and runs decisions as Go functions through plan's
  services. They are decisions like any other: the CLI lists them in `plan history`, `plan undo`
  takes them back, and `plan correct`, which cannot call a host's function, refuses to re-execute
  one and names the program that can. `plan exec` without --id names its decision itself.

  Background:
    Given a workspace
    And a file "keep.txt" containing "kept\n"

  Scenario: the CLI undoes the second of two Go decisions a host ran, byte for byte
    Given a host program "agent" ran the Go decision "first"
    And I remember the workspace as "after first"
    And a host program "agent" ran the Go decision "second"
    When I run "plan --json history"
    Then it succeeds
    And the JSON output lists 4 items
    When I run "plan --json undo --yes"
    Then it succeeds
    And the JSON output has "undone.kind" equal to "decision"
    And the JSON output has "undone.args.0" equal to "second"
    And the workspace equals "after first"
    When I run "plan --json status"
    Then the JSON output has "decisions.1.status" equal to "reverted"

  Scenario: the CLI refuses to re-execute a host's Go function and changes nothing
    Given a host program "agent" ran the Go decisions "first,second"
    And I remember the workspace as "after both"
    When I run "plan correct --decision first --reason wrong --yes"
    Then the exit code is 5
    And stderr contains "decision \"first\" is the Go function \"first\" of the host program agent"
    And stderr contains "only agent can run it"
    And the workspace equals "after both"

  Scenario: the CLI can still revert a host's Go decision without re-executing it, or replace it
    Given a host program "agent" ran the Go decisions "first,second"
    When I run "plan correct --decision second --reason wrong --no-reexecute --yes"
    Then it succeeds
    And "second.txt" does not exist
    And the file "first.txt" contains "written by first\n"
    When I run "plan correct --decision first --reason wrong --run 'echo shell > first.txt' --yes"
    Then the exit code is 5
    And stderr contains "decision \"second\" is the Go function"

  Scenario: plan exec without --id names the decision after its program
    Given an initialised workspace
    And an executable file "scripts/gen.sh" containing "#!/bin/sh\necho generated > gen.txt\n"
    When I run "plan --json exec -- echo one"
    Then the JSON output has "ran.0" equal to "echo-1"
    When I run "plan --json exec -- ./scripts/gen.sh"
    Then the JSON output has "ran.0" equal to "gen-sh-1"
    And the file "gen.txt" contains "generated\n"
    When I run "plan --json exec -- echo two"
    Then the JSON output has "ran.0" equal to "echo-2"
    When I run "plan --json status"
    Then the JSON output has "decisions.2.id" equal to "echo-2"

  Scenario: plan exec refuses an empty --id and a missing command
    When I run "plan exec --id '' -- true"
    Then the exit code is 3
    And stderr contains "decision ID"
    When I run "plan exec"
    Then the exit code is 2
    And stderr contains "missing command: plan exec [--id ID] -- CMD"
