Feature: Diff
  `plan diff [FROM [TO]] [--] [PATH...]` shows what changed between two checkpoints, or between a
  checkpoint (`@` when none is given) and the live workspace when TO is omitted: one line per change,
  and with --patch a unified diff of text. Paths limit it, relative to the current directory as git's.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "hello\n"
    And a file "b.txt" containing "bye\n"
    And a file "d/x" containing "inside\n"
    And a file "same.txt" containing "unchanged\n"
    And a checkpoint "before"

  Scenario: between two checkpoints, one line per change
    When I change "a.txt" to "changed\n"
    And I delete "b.txt"
    And a file "n.txt" containing "new\n"
    And I replace "d" with a file containing "now a file\n"
    And a checkpoint "after"
    And I run "plan diff <before> <after>"
    Then it succeeds
    And stdout is:
      """
      M a.txt
      D b.txt
      T d
      D d/x
      A n.txt
      """

  Scenario: limited to paths, relative to the directory it runs in
    When I change "a.txt" to "changed\n"
    And I change "d/x" to "changed\n"
    And I delete "b.txt"
    And I run "plan diff <before> a.txt"
    Then it succeeds
    And stdout is:
      """
      M a.txt
      """
    When I run "plan -C d diff <before> -- x ../b.txt"
    Then it succeeds
    And stdout is:
      """
      D b.txt
      M d/x
      """
    When I run "plan diff <before> -- nosuch.txt"
    Then the exit code is 4
    And stderr contains "nosuch.txt names nothing in"

  Scenario: between two checkpoints as JSON
    When I change "a.txt" to "changed\n"
    And I delete "b.txt"
    And a file "n.txt" containing "new\n"
    And I replace "d" with a file containing "now a file\n"
    And a checkpoint "after"
    And I run "plan --json diff <before> <after>"
    Then it succeeds
    And the JSON output has "from" equal to "<before>"
    And the JSON output has "to" equal to "<after>"
    And the JSON output has "changes" with exactly:
      | path  | change       | size |
      | a.txt | modified     | 8    |
      | b.txt | deleted      | 4    |
      | d     | type_changed | 11   |
      | d/x   | deleted      | 7    |
      | n.txt | added        | 4    |

  Scenario: a directory that replaced a file is a type change
    When I delete "a.txt"
    And a file "a.txt/inner" containing "x"
    And a checkpoint "after"
    And I run "plan --json diff <before> <after>"
    Then it succeeds
    And the JSON output has "changes" with exactly:
      | path        | change       |
      | a.txt       | type_changed |
      | a.txt/inner | added        |

  Scenario: a mode change is a modification
    When I change the mode of "a.txt" to "0755"
    And I run "plan --json diff <before>"
    Then it succeeds
    And the JSON output has "changes" with exactly:
      | path  | change   |
      | a.txt | modified |

  Scenario: --stat counts files, names a mode change, and prints nothing when nothing changed
    When I change the mode of "a.txt" to "0755"
    And I change "b.txt" to "bye\nagain\n"
    And I run "plan diff <before> --stat"
    Then it succeeds
    And stdout is:
      """
       a.txt | 0
       b.txt | 1 +
       2 files changed, 1 insertion(+), 0 deletions(-)
       mode change 100644 => 100755 a.txt
      """
    When a checkpoint "after"
    And I run "plan diff <after> --stat"
    Then it succeeds
    And stdout is empty

  Scenario: against the live workspace when TO is omitted
    When I change "a.txt" to "changed\n"
    And a file "n.txt" containing "new\n"
    And I run "plan --json diff <before>"
    Then it succeeds
    And the JSON output has "from" equal to "<before>"
    And the JSON output has "to" equal to "null"
    And the JSON output has "changes" with exactly:
      | path  | change   |
      | a.txt | modified |
      | n.txt | added    |

  Scenario: no changes, no lines
    When I run "plan diff <before>"
    Then it succeeds
    And stdout is empty
    When I run "plan --json diff <before>"
    Then it succeeds
    And the JSON output has 0 "changes"

  Scenario: --patch adds a unified diff for text files
    When I change "a.txt" to "changed\n"
    And I run "plan diff <before> --patch"
    Then it succeeds
    And stdout contains "M a.txt"
    And stdout contains "--- a/a.txt"
    And stdout contains "+++ b/a.txt"
    And stdout contains "-hello"
    And stdout contains "+changed"
    And stdout does not contain "same.txt"

  Scenario: --patch shows added and deleted sides as /dev/null and a mode change in its header
    When I delete "b.txt"
    And a file "n.txt" containing "new\n"
    And I change the mode of "a.txt" to "0755"
    And I run "plan diff <before> --patch"
    Then it succeeds
    And stdout contains "--- /dev/null"
    And stdout contains "+++ b/n.txt"
    And stdout contains "deleted file mode"
    And stdout contains "+++ /dev/null"
    And stdout contains "new mode 100755"

  Scenario: --patch between two checkpoints
    When I change "a.txt" to "changed\n"
    And a checkpoint "after"
    And I run "plan diff --patch <before> <after>"
    Then it succeeds
    And stdout contains "-hello"
    And stdout contains "+changed"

  Scenario: --patch does not print binary content
    Given a file "blob.bin" of 64 bytes of random data
    And a checkpoint "with-blob"
    When I delete "blob.bin"
    And a file "blob.bin" of 64 bytes of random data
    And I run "plan diff <with-blob> --patch"
    Then it succeeds
    And stdout contains "M blob.bin"
    And stdout contains "Binary"

  Scenario: --patch of content the store cannot read is an integrity error
    Given a file "big.bin" of 200000 bytes of random data
    And a checkpoint "big"
    When I delete "big.bin"
    And a file "big.bin" of 200000 bytes of random data
    And I flip a byte in the middle of the pack checkpoint "big" wrote
    And I run "plan --json diff <big> --patch"
    Then the exit code is 6
    And the JSON error has "error.kind" equal to "integrity"

  Scenario: checkpoints may be named by prefix
    Given I change "a.txt" to "changed\n"
    And a checkpoint "after"
    When I run "plan diff <before> <after:20>"
    Then it succeeds
    And stdout contains "M a.txt"

  Scenario: an unknown checkpoint is not found
    When I run "plan diff 0123456789ab"
    Then the exit code is 4
    When I run "plan diff <before> 0123456789ab"
    Then the exit code is 4
