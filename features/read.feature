Feature: Reading a checkpoint without restoring it
  `plan cat REF PATH` prints a file as a checkpoint holds it, `plan ls REF [PATH]` lists what it
  holds, and `plan restore REF --target DIR [-- PATH…]` copies it (or some of its paths) into
  another directory, as restic's restore does. None of them touches the workspace or its history.
  `plan diff` also has --stat, --name-only and --exit-code.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "one\n"
    And a file "sub/b.txt" containing "two\n"
    And a symlink "link" pointing to "a.txt"
    And a checkpoint "saved"
    And I change "a.txt" to "changed\n"
    And I remember the workspace as "now"

  Scenario: cat prints the checkpoint's content, not the workspace's
    When I run "plan cat <saved> a.txt"
    Then it succeeds
    And stdout is:
      """
      one
      """
    And the workspace equals "now"

  Scenario: cat of a directory or a missing path is refused with its exit code
    When I run "plan cat <saved> sub"
    Then the exit code is 3
    And stderr contains "is a directory"
    When I run "plan cat <saved> nowhere.txt"
    Then the exit code is 4
    And stderr contains "has no nowhere.txt"

  Scenario: ls lists one level, -r everything below
    When I run "plan ls <saved>"
    Then it succeeds
    And stdout contains "a.txt"
    And stdout contains "link -> a.txt"
    And stdout contains "sub/"
    And stdout does not contain "b.txt"
    When I run "plan --json ls -r <saved> sub"
    Then it succeeds
    And the JSON output has "entries" with exactly:
      | path      | kind |
      | sub/b.txt | file |

  Scenario: restore --target copies the checkpoint elsewhere and leaves the workspace alone
    When I run "plan restore <saved> --target <outside>/copy"
    Then it succeeds
    And the file "<outside>/copy/a.txt" contains "one\n"
    And the file "<outside>/copy/sub/b.txt" contains "two\n"
    And "<outside>/copy/link" is a symlink to "a.txt"
    And the workspace equals "now"

  Scenario: restore --target of some paths keeps the checkpoint's layout
    When I run "plan --json restore <saved> --target <outside>/part -- sub/b.txt"
    Then it succeeds
    And the JSON output has "files" equal to "1"
    And the file "<outside>/part/sub/b.txt" contains "two\n"
    And "<outside>/part/a.txt" does not exist

  Scenario: restore --target refuses a directory that is not empty, and changes nothing
    Given a file "<outside>/busy/mine.txt" containing "mine"
    When I run "plan restore <saved> --target <outside>/busy"
    Then the exit code is 5
    And stderr contains "is not empty"
    And the file "<outside>/busy/mine.txt" contains "mine"

  Scenario: restore without --target is a usage error
    When I run "plan restore <saved>"
    Then the exit code is 2
    And stderr contains "missing --target DIR"

  Scenario: diff --stat, --name-only and --exit-code
    When I run "plan diff <saved> --stat"
    Then it succeeds
    And stdout is:
      """
       a.txt | 2 +-
       1 file changed, 1 insertion(+), 1 deletion(-)
      """
    When I run "plan diff <saved> --name-only"
    Then stdout is:
      """
      a.txt
      """
    When I run "plan diff <saved> --exit-code"
    Then the exit code is 1
    And stderr is empty
    When I run "plan diff <saved> <saved> --exit-code"
    Then it succeeds

  Scenario: show is what one decision changed
    Given a plan file "p.yaml" with:
      """
      name: demo
      decisions:
        - id: one
          run: echo hello > c.txt
        - id: two
          run: echo bye >> c.txt
      """
    When I run "plan run <plans>/p.yaml"
    Then it succeeds
    When I run "plan show two --patch"
    Then it succeeds
    And stdout contains "decision two of plan demo"
    And stdout contains "+bye"
    And stdout does not contain "+hello"
    When I run "plan show three"
    Then the exit code is 4
