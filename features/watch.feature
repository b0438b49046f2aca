Feature: The change-tracking service
  `plan watch` follows the workspace's changes (inotify) and takes the snapshots that commands from
  new processes ask it for, reading only what changed. A command that gets no answer walks the
  workspace, as without the service: the service is never trusted more than a walk. See docs/watch.md.

  Background:
    Given an initialised workspace
    And a file "a.txt" containing "one\n"
    And a file "dir/b.txt" containing "two\n"

  Scenario: checkpoints through the service record every change
    Given the watch service runs
    When I change "a.txt" to "changed\n"
    And I delete "dir/b.txt"
    And a file "new/c.txt" containing "three\n"
    And I run "plan checkpoint create" and remember the checkpoint as "cp"
    And I run "plan ls <cp> -r"
    Then it succeeds
    And stdout contains "new/c.txt"
    And stdout does not contain "dir/b.txt"
    When I run "plan cat <cp> a.txt"
    Then stdout is:
      """
      changed
      """
    When I run "plan watch status --json"
    Then it succeeds
    And stderr is empty
    And the JSON output has "running" equal to "true"
    And the JSON output has "events" equal to "on"
    And the JSON output has "walks" equal to "1"
    And the JSON output has "snapshots" equal to "2"

  Scenario: a rollback's safety checkpoint and the rollback go through the service
    Given the watch service runs
    And a checkpoint "before"
    When I change "a.txt" to "later\n"
    And I run "plan rollback --to-checkpoint <before> --yes --json"
    Then it succeeds
    And the file "a.txt" contains "one\n"
    When I run "plan checkpoint list --json"
    Then the JSON output has "0.type" equal to "pre_rollback"
    When I change "a.txt" to "after the rollback\n"
    And I run "plan checkpoint create" and remember the checkpoint as "after"
    And I run "plan cat <after> a.txt"
    Then stdout contains "after the rollback"

  Scenario: a service killed with SIGKILL leaves a socket that commands walk around
    Given the watch service runs
    And the watch service is killed with SIGKILL
    When I change "a.txt" to "while it was dead\n"
    And I run "plan checkpoint create" and remember the checkpoint as "cp"
    Then stderr contains "the watch service did not answer"
    When I run "plan cat <cp> a.txt"
    Then stdout contains "while it was dead"
    When I run "plan watch stop"
    Then stdout contains "was not running"
    And ".plan/watch.sock" does not exist

  Scenario: a stale socket is replaced by the next service
    Given a stale watch socket
    And the watch service runs
    When I change "a.txt" to "two\n"
    And I run "plan checkpoint create" and remember the checkpoint as "cp"
    Then stderr does not contain "did not answer"
    When I run "plan cat <cp> a.txt"
    Then stdout contains "two"

  Scenario: a process that is not a service on the socket is never trusted
    Given another process listens on the watch socket
    When I change "a.txt" to "mine\n"
    And I run "plan checkpoint create" and remember the checkpoint as "cp"
    Then stderr contains "the watch service did not answer"
    When I run "plan cat <cp> a.txt"
    Then stdout contains "mine"

  Scenario: one service per workspace
    Given the watch service runs
    When I run "plan watch"
    Then the exit code is 5
    And stderr contains "already runs"

  Scenario: status and stop when nothing runs
    When I run "plan watch status --json"
    Then it succeeds
    And the JSON output has "running" equal to "false"
    When I run "plan watch stop"
    Then it succeeds
    And stdout contains "was not running"

  Scenario: an idle checkpoint once changes settle
    Given the watch service runs with "--quiet 1s"
    When I change "a.txt" to "settled\n"
    Then within 15 seconds the workspace has a checkpoint of type "idle"
    When I run "plan checkpoint list --json"
    Then the JSON output has "0.note" equal to "plan watch: after 1s without changes"
    And the JSON output has "0.labels.watch" equal to "idle"

  Scenario: a service stops by itself once nothing asks and nothing changes
    Given the watch service runs with "--stop-after 1s"
    When I run "plan watch status --json"
    Then the JSON output has "stop_after" equal to "1s"
    And within 15 seconds the watch service has stopped
    When I run "plan checkpoint create"
    Then it succeeds
    And stderr does not contain "did not answer"

  Scenario Outline: bad durations and flag combinations are refused
    When I run "plan watch <flags>"
    Then the exit code is <code>
    And stderr contains "<message>"

    Examples:
      | flags                 | code | message                      |
      | --every soon          | 3    | is not a duration            |
      | --quiet 500ms         | 3    | at least 1s                  |
      | --every 0s            | 3    | at least 1s                  |
      | --stop-after 10ms     | 3    | at least 1s                  |
      | stop --quiet 30s      | 2    | plan watch stop --help       |
