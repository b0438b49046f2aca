Feature: Corrections stay corrected
  A correction's command (`plan correct --run`, `plan revert --run`) is the corrected decision's
  definition until the plan file itself changes that decision: running the unchanged plan file again
  neither warns that it changed nor re-runs the wrong command, and when the file does change the
  decision the warning names the correction its command supersedes. A correction's re-execution ends
  with the same post_run checkpoint a run does; `correction list` marks an undone correction as
  `history` does; and `plan exec` adds to an ad-hoc plan of its own, never to a plan file's plan.

  Background:
    Given a workspace
    And a plan file "site.yaml" with:
      """
      name: site
      decisions:
        - id: a
          run: echo a > a.txt
        - id: b
          run: echo wrong > b.txt
        - id: c
          run: cat b.txt > c.txt
      """
    And a plan file "site-changed.yaml" with:
      """
      name: site
      decisions:
        - id: a
          run: echo a > a.txt
        - id: b
          run: echo other > b.txt
        - id: c
          run: cat b.txt > c.txt
      """
    And I run "plan run <plans>/site.yaml"
    And it succeeds

  Scenario: the unchanged plan file keeps the corrected command, with and without --rerun-changed
    When I run "plan --json correct --decision b --reason 'wrong text' --run 'echo right > b.txt' --yes"
    Then it succeeds
    When I run "plan run <plans>/site.yaml"
    Then it succeeds
    And stderr does not contain "the plan file changed"
    When I run "plan --json run <plans>/site.yaml --rerun-changed"
    Then it succeeds
    And the JSON output has "changed_decisions" equal to "[]"
    And the JSON output has "ran" equal to "[]"
    And the file "b.txt" contains "right\n"
    And the file "c.txt" contains "right\n"

  Scenario: a plan file that changes the corrected decision supersedes the correction, and says which
    When I run "plan --json correct --decision b --reason 'wrong text' --run 'echo right > b.txt' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan --json run <plans>/site-changed.yaml"
    Then it succeeds
    And stderr contains "b (command; the file's command supersedes correction <fix>)"
    And the JSON output has "changed_decisions.0.supersedes" equal to "<fix>"
    And the file "b.txt" contains "right\n"
    When I run "plan run <plans>/site-changed.yaml --rerun-changed"
    Then it succeeds
    And stderr contains "decision b: re-run with the plan file's command, which supersedes correction <fix>"
    And the file "b.txt" contains "other\n"
    And the file "c.txt" contains "other\n"

  Scenario: a corrected decision reverted since runs again with the corrected command
    When I run "plan correct --decision b --reason 'wrong text' --run 'echo right > b.txt' --yes"
    Then it succeeds
    When I run "plan revert --decision b --reason 'take it out for now' --yes"
    Then it succeeds
    And "b.txt" does not exist
    When I run "plan run <plans>/site.yaml"
    Then it succeeds
    And stderr contains "running b (attempt 3"
    And stderr contains "echo right > b.txt"
    And stderr does not contain "warning"
    And the file "b.txt" contains "right\n"

  Scenario: a correction's re-execution ends with the post_run checkpoint a run takes
    When I run "plan correct --decision c --reason 'copy the other way' --run 'echo fixed > c.txt' --yes"
    Then it succeeds
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "workspace.changes.added" equal to "0"
    And the JSON output has "workspace.changes.modified" equal to "0"
    When I run "plan --json checkpoint show @"
    Then it succeeds
    And the JSON output has "type" equal to "post_run"
    When I run "plan diff c^ c --patch"
    Then it succeeds
    And stdout contains "+fixed"

  Scenario: an undone correction is listed as undone until a redo
    When I run "plan --json correct --decision b --reason 'wrong text' --run 'echo right > b.txt' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan undo --yes"
    Then it succeeds
    When I run "plan correction list"
    Then it succeeds
    And stdout contains "succeeded (undone)"
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "undone_by" matching "^[0-9a-f]{24}$"
    When I run "plan run <plans>/site.yaml"
    Then it succeeds
    And the file "b.txt" contains "wrong\n"
    When I run "plan undo --yes"
    Then it succeeds
    When I run "plan undo --yes"
    Then it succeeds
    When I run "plan correction list"
    Then it succeeds
    And stdout contains "succeeded (undone)"

  Scenario: plan exec adds to the ad-hoc plan, which a correction of the plan file's decision does not re-execute
    When I run "plan exec --id note -- sh -c 'echo note > note.txt'"
    Then it succeeds
    When I run "plan status --plan site --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id | status    |
      | a  | succeeded |
      | b  | succeeded |
      | c  | succeeded |
    When I run "plan status --plan adhoc --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id   | status    |
      | note | succeeded |
    When I run "plan exec --plan site --id more -- true"
    Then the exit code is 5
    And stderr contains "runs from its plan file"
    When I run "plan --json correct --decision b --reason 'wrong text' --run 'echo right > b.txt' --yes"
    Then it succeeds
    And the JSON output has "reexecuted_decisions" equal to "["b","c"]"
    When I run "plan status --plan adhoc --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id   | status   |
      | note | reverted |
