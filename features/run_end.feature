Feature: The end of a run is a checkpoint
  After the last decision of `plan run` (and after `plan exec`) the state the run left is recorded as
  a post_run checkpoint, so a clone of the newest checkpoint is the workspace as the run left it,
  byte for byte, and `@` names it.

  Scenario: a clone of the newest checkpoint after a run equals the workspace
    Given a workspace
    And a shared store in a directory
    And a file "src/main.go" containing "package main\n"
    When I run "plan --json init --store <store>"
    Then it succeeds
    And I remember the JSON output "workspace_id" as "source"
    Given a plan file "p.yaml" with:
      """
      name: build
      decisions:
        - id: generate
          run: mkdir -p gen && echo generated > gen/out.txt && chmod +x gen/out.txt
        - id: edit
          run: echo "// edited" >> src/main.go && ln -s gen/out.txt current && rm -f nothing
      """
    When I run "plan run <plans>/p.yaml"
    Then it succeeds
    And I remember the workspace as "after the run"
    When I run "plan --json checkpoint list --limit 1"
    Then the JSON output has "0.type" equal to "post_run"
    When I run "plan clone --store <store> --workspace <source> <outside>/copy"
    Then it succeeds
    And "<outside>/copy" equals the workspace remembered as "after the run"
    # The clone stands on its clone checkpoint, not on the empty pre_rollback its restore took.
    When I run "plan -C <outside>/copy status"
    Then it succeeds
    And stdout contains "no changes since"
    When I run "plan diff @ --exit-code"
    Then it succeeds
