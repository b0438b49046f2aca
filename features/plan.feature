Feature: Plans and decisions
  `plan run FILE` executes a plan file's decisions in order, each a shell command run in the workspace
  root. Before each decision it takes a pre_decision checkpoint, and after it records what the decision
  changed: its artifacts. Running the same plan again resumes it. `plan exec` adds one ad-hoc decision
  to the current plan; `plan status` and `plan log` show what happened.

  Plan files are written under <plans>, outside the workspace, so they are not among what the
  decisions change.

  Background:
    Given a workspace

  Scenario: a three-decision plan runs and records each decision's checkpoint and artifacts
    Given a plan file "site.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          name: Scaffold the sources
          run: mkdir -p src && echo main > src/main.txt && echo old > legacy.txt
        - id: configure
          run: echo env=production > config.txt && rm legacy.txt && echo debug=false >> src/main.txt
        - id: build
          run: mkdir -p out && cat config.txt src/main.txt > out/site.txt && ln -s out/site.txt current
      """
    When I run "plan run <plans>/site.yaml"
    Then it succeeds
    And "<history>/plan.db" exists
    And the file "out/site.txt" contains "env=production\nmain\ndebug=false\n"
    And "current" is a symlink to "out/site.txt"
    And "legacy.txt" does not exist
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "plan.name" equal to "site"
    And the JSON output has "plan.checkpoints" equal to "true"
    And the JSON output has "decisions.0.id" equal to "scaffold"
    And the JSON output has "decisions.1.id" equal to "configure"
    And the JSON output has "decisions.2.id" equal to "build"
    And the JSON output has "decisions" with exactly:
      | id        | name                 | status    | attempt | exit_code |
      | scaffold  | Scaffold the sources | succeeded | 1       | 0         |
      | configure |                      | succeeded | 1       | 0         |
      | build     |                      | succeeded | 1       | 0         |
    And the JSON output has "decisions.0.started_at" matching "^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
    And the JSON output has "decisions.0.finished_at" matching "^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
    And the JSON output has decision "scaffold" with artifacts:
      | path         | change | content |
      | legacy.txt   | added  | old\n   |
      | src/main.txt | added  | main\n  |
    And the JSON output has decision "configure" with artifacts:
      | path         | change   | content           |
      | config.txt   | added    | env=production\n  |
      | legacy.txt   | deleted  | old\n             |
      | src/main.txt | modified | main\ndebug=false\n |
    And the JSON output has decision "build" with artifacts:
      | path         | change | content                            |
      | out/site.txt | added  | env=production\nmain\ndebug=false\n |
      | current      | added  | out/site.txt                       |
    And every decision's checkpoint_id in the JSON output names its pre_decision checkpoint
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output lists 4 items
    And the JSON output has "0.type" equal to "post_run"
    And the JSON output has "0.decision_id" equal to "build"

  Scenario: the run's JSON output says what ran and what was skipped
    Given a plan file "plan.yaml" with:
      """
      name: twice
      decisions:
        - id: one
          run: echo one > one.txt
      """
    When I run "plan --json run <plans>/plan.yaml"
    Then it succeeds
    And the JSON output has "ran" equal to "["one"]"
    And the JSON output has "skipped" equal to "[]"
    When I run "plan --json run <plans>/plan.yaml"
    Then it succeeds
    And the JSON output has "ran" equal to "[]"
    And the JSON output has "skipped" equal to "["one"]"
    And the JSON output has decision "one" with attempts:
      | attempt | status    |
      | 1       | succeeded |

  Scenario: a failing decision stops the run, and running the fixed plan again resumes it
    Given a plan file "plan.yaml" with:
      """
      name: resumable
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt && exit 3
        - id: three
          run: echo three > three.txt
      """
    When I run "plan run <plans>/plan.yaml"
    Then the exit code is not 0
    And stderr contains "decision \"two\" failed with exit code 3"
    And the file "one.txt" contains "one\n"
    And "three.txt" does not exist
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt | exit_code | checkpoint_id |
      | one   | succeeded | 1       | 0         | (set)         |
      | two   | failed    | 1       | 3         | (set)         |
      | three | skipped   | 0       | null      | null          |
    Given a plan file "plan.yaml" with:
      """
      name: resumable
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
        - id: three
          run: echo three > three.txt
      """
    When I run "plan run <plans>/plan.yaml"
    Then it succeeds
    And stderr contains "one already succeeded; skipping it"
    And the file "three.txt" contains "three\n"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt | exit_code |
      | one   | succeeded | 1       | 0         |
      | two   | succeeded | 2       | 0         |
      | three | succeeded | 1       | 0         |
    And the JSON output has decision "one" with attempts:
      | attempt | status    |
      | 1       | succeeded |
    And the JSON output has decision "two" with attempts:
      | attempt | status    | exit_code | command                        |
      | 1       | failed    | 3         | echo two > two.txt && exit 3   |
      | 2       | succeeded | 0         | echo two > two.txt             |
    And every decision's checkpoint_id in the JSON output names its pre_decision checkpoint

  Scenario: --on-failure rollback undoes the failed decision's changes
    Given a plan file "first.yaml" with:
      """
      name: careful
      decisions:
        - id: one
          run: echo one > one.txt && echo keep > keep.txt
      """
    And a plan file "all.yaml" with:
      """
      name: careful
      decisions:
        - id: one
          run: echo one > one.txt && echo keep > keep.txt
        - id: two
          run: echo two > two.txt && rm keep.txt && echo changed > one.txt && mkdir -p junk/deep && exit 3
        - id: three
          run: echo three > three.txt
      """
    When I run "plan run <plans>/first.yaml"
    Then it succeeds
    And I remember the workspace as "before-two"
    When I run "plan run <plans>/all.yaml --on-failure rollback"
    Then the exit code is not 0
    And stderr contains "decision \"two\" failed with exit code 3"
    And the workspace equals "before-two"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt | exit_code |
      | one   | succeeded | 1       | 0         |
      | two   | reverted  | 1       | 3         |
      | three | skipped   | 0       | null      |
    And the JSON output has "decisions.1.attempts.0.reverted_by" matching "^[0-9a-f]{24}$"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the JSON output has "0.type" equal to "pre_rollback"

  Scenario: --on-failure rollback is refused without checkpoints instead of silently skipped
    Given a plan file "plan.yaml" with:
      """
      name: fast
      decisions:
        - id: one
          run: echo one > one.txt
      """
    When I run "plan run <plans>/plan.yaml --no-checkpoints --on-failure rollback"
    Then the exit code is 3
    And stderr contains "needs the pre_decision checkpoints"
    And "one.txt" does not exist

  Scenario: --no-checkpoints runs without checkpoints, and its decisions cannot be corrected
    Given a plan file "plan.yaml" with:
      """
      name: fast
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
      """
    When I run "plan run <plans>/plan.yaml --no-checkpoints"
    Then it succeeds
    And the file "two.txt" contains "two\n"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "plan.checkpoints" equal to "false"
    And the JSON output has "decisions" with exactly:
      | id  | status    | checkpoint_id |
      | one | succeeded | null          |
      | two | succeeded | null          |
    When I run "plan checkpoint list --json"
    Then it succeeds
    And the JSON output lists 0 items
    When I run "plan correct --decision one --reason 'it was wrong' --yes"
    Then the exit code is 5
    And stderr contains "--no-checkpoints"
    And the file "one.txt" contains "one\n"
    And the file "two.txt" contains "two\n"

  Scenario: a plan file that is not YAML is refused with its name and line
    Given a plan file "bad.yaml" with:
      """
      name: broken
      decisions: [
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml"
    And stderr contains "line 2"
    And ".plan" does not exist

  Scenario: a plan file without a name is refused
    Given a plan file "bad.yaml" with:
      """
      decisions:
        - id: one
          run: echo one > one.txt
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:1:"
    And stderr contains "name"
    And "one.txt" does not exist
    And ".plan" does not exist

  Scenario: a plan file without decisions is refused
    Given a plan file "bad.yaml" with:
      """
      name: idle
      decisions: []
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:2:"
    And stderr contains "at least one decision"
    And ".plan" does not exist

  Scenario: a plan file that uses a decision ID twice is refused
    Given a plan file "bad.yaml" with:
      """
      name: twice
      decisions:
        - id: one
          run: echo one > one.txt
        - id: one
          run: echo again > again.txt
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:5:"
    And stderr contains "\"one\""
    And "one.txt" does not exist
    And ".plan" does not exist

  Scenario: a plan file with an illegal decision ID is refused
    Given a plan file "bad.yaml" with:
      """
      name: shouting
      decisions:
        - id: ok
          run: echo ok > ok.txt
        - id: Bad_ID
          run: echo bad > bad.txt
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:5:"
    And stderr contains "Bad_ID"
    And "ok.txt" does not exist
    And ".plan" does not exist

  Scenario: a plan file with a decision that has nothing to run is refused
    Given a plan file "bad.yaml" with:
      """
      name: lazy
      decisions:
        - id: one
          name: Does nothing
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:3:"
    And stderr contains "run"
    And ".plan" does not exist

  Scenario: a plan file with an unknown key is refused rather than ignored
    Given a plan file "bad.yaml" with:
      """
      name: typo
      decisions:
        - id: one
          rn: echo one > one.txt
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:4:"
    And stderr contains "\"rn\""
    And "one.txt" does not exist
    And ".plan" does not exist

  Scenario: a plan file with a timeout that is no duration is refused
    Given a plan file "bad.yaml" with:
      """
      name: patient
      decisions:
        - id: one
          run: echo one > one.txt
          timeout: soon
      """
    When I run "plan run <plans>/bad.yaml"
    Then the exit code is 3
    And stderr contains "<plans>/bad.yaml:5:"
    And stderr contains "soon"
    And "one.txt" does not exist
    And ".plan" does not exist

  Scenario: a plan file that does not exist is not found
    When I run "plan run <plans>/missing.yaml"
    Then the exit code is 4
    And stderr contains "<plans>/missing.yaml"
    And ".plan" does not exist

  Scenario: a decision that outlives its timeout is stopped and fails
    Given a plan file "slow.yaml" with:
      """
      name: slow
      decisions:
        - id: wait
          timeout: 1s
          run: echo started > started.txt && sleep 30 && echo done > done.txt
      """
    When I run "plan run <plans>/slow.yaml"
    Then the exit code is not 0
    And it took less than 10 seconds
    And stderr contains "decision \"wait\" timed out"
    And the file "started.txt" contains "started\n"
    And "done.txt" does not exist
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id   | status | attempt |
      | wait | failed | 1       |
    And the JSON output has decision "wait" with artifacts:
      | path        | change | content   |
      | started.txt | added  | started\n |

  # A timeout ends the run before the code that handles a failed decision (application.PlanService.Run
  # returns the timeout error of execute before SkipPending and the --on-failure rollback branch): the
  # decisions after it stay pending, and --on-failure rollback does not roll back.
  Scenario: a decision that timed out stops the run like any failure: the later decisions are skipped
    Given a plan file "slow.yaml" with:
      """
      name: slow
      decisions:
        - id: wait
          timeout: 1s
          run: sleep 30
        - id: after
          run: echo after > after.txt
      """
    When I run "plan run <plans>/slow.yaml"
    Then the exit code is not 0
    And "after.txt" does not exist
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status  | attempt |
      | wait  | failed  | 1       |
      | after | skipped | 0       |

  Scenario: --on-failure rollback also undoes a decision that timed out
    Given a plan file "first.yaml" with:
      """
      name: slow
      decisions:
        - id: one
          run: echo one > one.txt
      """
    And a plan file "all.yaml" with:
      """
      name: slow
      decisions:
        - id: one
          run: echo one > one.txt
        - id: wait
          timeout: 1s
          run: echo partial > partial.txt && rm one.txt && sleep 30
      """
    When I run "plan run <plans>/first.yaml"
    Then it succeeds
    And I remember the workspace as "before-wait"
    When I run "plan run <plans>/all.yaml --on-failure rollback"
    Then the exit code is not 0
    And the workspace equals "before-wait"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id   | status    | attempt |
      | one  | succeeded | 1       |
      | wait | reverted  | 1       |

  Scenario: a decision's env reaches its command, with PLAN_DECISION_ID set
    Given a plan file "env.yaml" with:
      """
      name: env
      decisions:
        - id: greet
          env: {GREETING: hello world, MODE: fast}
          run: echo "$GREETING|$MODE|$PLAN_DECISION_ID" > greet.txt
        - id: other
          run: echo "[$GREETING]|$PLAN_DECISION_ID" > other.txt
      """
    When I run "plan run <plans>/env.yaml"
    Then it succeeds
    And the file "greet.txt" contains "hello world|fast|greet\n"
    And the file "other.txt" contains "[]|other\n"

  Scenario: plan exec adds an ad-hoc decision, with its checkpoint and artifacts, to the ad-hoc plan
    Given a plan file "plan.yaml" with:
      """
      name: site
      decisions:
        - id: one
          run: echo one > one.txt
      """
    When I run "plan run <plans>/plan.yaml"
    Then it succeeds
    When I run "plan exec --id fix -- sh -c 'echo hi > hi.txt'"
    Then it succeeds
    And the file "hi.txt" contains "hi\n"
    When I run "plan status --plan site --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id  | status    | attempt | exit_code |
      | one | succeeded | 1       | 0         |
    When I run "plan status --plan adhoc --json"
    Then it succeeds
    And the JSON output has "plan.name" equal to "adhoc"
    And the JSON output has "decisions" with exactly:
      | id  | status    | attempt | exit_code |
      | fix | succeeded | 1       | 0         |
    And the JSON output has decision "fix" with artifacts:
      | path   | change | content |
      | hi.txt | added  | hi\n    |
    And every decision's checkpoint_id in the JSON output names its pre_decision checkpoint

  Scenario: plan exec starts an ad-hoc plan in a workspace that has none
    When I run "plan exec --id first -- sh -c 'echo first > first.txt'"
    Then it succeeds
    And "<history>/plan.db" exists
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "plan.name" equal to "adhoc"
    And the JSON output has decision "first" with artifacts:
      | path      | change | content |
      | first.txt | added  | first\n |

  Scenario: plan exec exits with its command's status and ends with one line
    When I run "plan exec --id fix -- sh -c 'echo hi > hi.txt'"
    Then it succeeds
    And stdout contains "fix succeeded on plan adhoc (1 file changed; checkpoint "
    And stdout does not contain "DECISION"
    When I run "plan exec -- no-such-command-anywhere"
    Then the exit code is 127
    And stderr contains "failed with exit code 127"
    When I run "plan exec -- sh -c 'exit 42'"
    Then the exit code is 42

  Scenario: plan exec refuses a decision that already succeeded, and needs a command
    When I run "plan exec --id fix -- sh -c 'echo hi > hi.txt'"
    Then it succeeds
    When I run "plan exec --id fix -- sh -c 'echo again > hi.txt'"
    Then the exit code is 5
    And stderr contains "already succeeded"
    And the file "hi.txt" contains "hi\n"
    When I run "plan exec --id no"
    Then the exit code is 2
    And stderr contains "missing command"
    When I run "plan exec --id Bad_ID -- true"
    Then the exit code is 3

  Scenario: plan log prints a decision's recorded output
    Given a plan file "talk.yaml" with:
      """
      name: talk
      decisions:
        - id: talk
          run: echo hello from talk && echo to stderr >&2
        - id: quiet
          run: "true"
      """
    When I run "plan run <plans>/talk.yaml"
    Then it succeeds
    When I run "plan log talk"
    Then it succeeds
    And stdout is:
      """
      hello from talk
      to stderr
      """
    When I run "plan log quiet"
    Then it succeeds
    And stdout is empty
    When I run "plan log --json talk"
    Then it succeeds
    And the JSON output has "0.decision" equal to "talk"
    And the JSON output has "0.attempt" equal to "1"
    And the JSON output has "0.output" containing "hello from talk\nto stderr\n"
    When I run "plan log nope"
    Then the exit code is 4
    And stderr contains "nope"

  # A decision's log is kept with the rest of the history (out of reach of git clean -fdx), and
  # plan log --json names the file where it is.
  Scenario: plan log --json names the decision's log file where it is
    Given a plan file "talk.yaml" with:
      """
      name: talk
      decisions:
        - id: talk
          run: echo hello from talk
      """
    When I run "plan run <plans>/talk.yaml"
    Then it succeeds
    And "<history>/logs/plans/talk/talk.1.log" exists
    When I run "plan log --json talk"
    Then it succeeds
    And the JSON output has "0.log_path" equal to "<history>/logs/plans/talk/talk.1.log"

  Scenario: status works before any plan ran, log needs one
    Given an initialised workspace
    And a file "a.txt" containing "a"
    When I run "plan status"
    Then it succeeds
    And stdout contains "no checkpoint yet"
    And stdout contains "changes since: 1 file (1 added, 0 modified, 0 deleted"
    And stdout contains "no plan has run yet"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "plan" equal to "null"
    And the JSON output has "workspace.changes.added" equal to "1"
    When I run "plan status --plan nope"
    Then the exit code is 4
    When I run "plan log"
    Then the exit code is 4

  Scenario: a plan killed during a decision leaves it interrupted, and the next command closes it
    Given a plan file "slow.yaml" with:
      """
      name: slow
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: test -f go.txt || { echo started > marker.txt && sleep 30; }
        - id: three
          run: echo three > three.txt
      """
    When I start "plan run <plans>/slow.yaml" and kill it once "marker.txt" exists
    Then the process was killed
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status      | attempt | exit_code |
      | one   | succeeded   | 1       | 0         |
      | two   | interrupted | 1       | null      |
      | three | pending     | 0       | null      |
    And the JSON output has decision "two" with artifacts:
      | path       | change | content    |
      | marker.txt | added  | started\n  |
    When I run "plan verify --json"
    Then it succeeds
    And the JSON output has "ok" equal to "true"
    When I run "plan correct --decision three --reason 'never ran' --yes"
    Then the exit code is 5
    And stderr contains "not executed"
    Given a file "go.txt" containing "go"
    When I run "plan run <plans>/slow.yaml"
    Then it succeeds
    And the file "three.txt" contains "three\n"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt |
      | one   | succeeded | 1       |
      | two   | succeeded | 2       |
      | three | succeeded | 1       |

  # The shell dies with plan (Pdeathsig), but what it started does not: after plan is killed, the
  # decision's command keeps running and changing the workspace, although the next command records
  # the decision as interrupted with the artifacts it sees then.
  Scenario: killing plan stops the decision's processes too
    Given a plan file "slow.yaml" with:
      """
      name: slow
      decisions:
        - id: one
          run: sh -c 'echo started > marker.txt; sleep 2; echo late > late.txt'
      """
    When I start "plan run <plans>/slow.yaml" and kill it once "marker.txt" exists
    Then the process was killed
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions.0.status" equal to "interrupted"
    And no process is left running in the workspace

  Scenario: a checkpoint a live decision needs is deleted only with --force
    Given a plan file "keep.yaml" with:
      """
      name: keep
      decisions:
        - id: one
          run: echo one > one.txt
      """
    When I run "plan run <plans>/keep.yaml"
    Then it succeeds
    When I run "plan status --json"
    Then it succeeds
    And I remember the JSON output "decisions.0.checkpoint_id" as "pre"
    When I run "plan checkpoint delete <pre>"
    Then the exit code is 5
    And stderr contains "pass --force"
    When I run "plan checkpoint show <pre>"
    Then it succeeds
    When I run "plan checkpoint delete <pre> --force"
    Then it succeeds
    When I run "plan correct --decision one --reason 'gone' --yes"
    Then the exit code is 5
    And stderr contains "was deleted"

  Scenario: a nested repository a decision destroyed comes back with its history
    Given a file "vendor/lib/.git/HEAD" containing "ref: refs/heads/main\n"
    And a file "vendor/lib/.git/refs/heads/main" containing "1234abcd\n"
    And a file "vendor/lib/code.go" containing "package lib\n"
    And I remember the workspace as "with-vendor"
    When I run "plan exec --id mk -- rm -rf vendor"
    Then it succeeds
    And "vendor" does not exist
    When I run "plan correct --decision mk --reason 'deleted a vendored repository' --no-reexecute --yes"
    Then it succeeds
    And the workspace equals "with-vendor"
    And the file "vendor/lib/.git/refs/heads/main" contains "1234abcd\n"

  Scenario Outline: rollback --mode <mode> restores <what>
    Given a plan file "two.yaml" with:
      """
      name: two
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
      """
    When I run "plan run <plans>/two.yaml"
    Then it succeeds
    And I remember the workspace as "after-run"
    When I run "plan --json status"
    And I remember the JSON output "decisions.1.checkpoint_id" as "before-two"
    When I run "plan --json rollback --to-checkpoint <before-two> --mode <mode> --yes"
    Then it succeeds
    And the JSON output has "mode" equal to "<mode>"
    And the file "one.txt" contains "one\n"
    And "two.txt" <two-txt>
    When I run "plan --json status"
    Then the JSON output has "decisions.1.status" equal to "<two-status>"

    Examples:
      | mode  | what                                | two-txt        | two-status |
      | both  | the files and the decision states   | does not exist | reverted   |
      | files | the files only                      | does not exist | succeeded  |
      | state | the decision states only            | exists         | reverted   |

  Scenario: --mode state --dry-run says which decisions it would revert and changes nothing
    Given a plan file "two.yaml" with:
      """
      name: two
      decisions:
        - id: one
          run: echo one > one.txt
        - id: two
          run: echo two > two.txt
      """
    When I run "plan run <plans>/two.yaml"
    Then it succeeds
    When I run "plan --json status"
    And I remember the JSON output "decisions.0.checkpoint_id" as "before-one"
    When I run "plan --json rollback --to-checkpoint <before-one> --mode state --dry-run"
    Then it succeeds
    And the JSON output has "reverted_decisions" equal to "["one","two"]"
    When I run "plan --json status"
    Then the JSON output has "decisions.1.status" equal to "succeeded"
    When I run "plan rollback --to-checkpoint <before-one> --mode sideways --yes"
    Then the exit code is 3

  Scenario: rollback --at picks the newest checkpoint created at or before a time
    Given an initialised workspace
    And a file "a.txt" containing "v1\n"
    And a checkpoint "one"
    When I run "plan --json rollback --at 2020-01-01T00:00:00Z --yes"
    Then the exit code is 4
    When I change "a.txt" to "v2\n"
    And I run "plan --json rollback --at 2100-01-01T00:00:00Z --yes"
    Then it succeeds
    And the JSON output has "checkpoint_id" equal to "<one>"
    And the file "a.txt" contains "v1\n"
    When I run "plan rollback --at yesterday --yes"
    Then the exit code is 3
    When I run "plan rollback --at 1h --to-checkpoint <one> --yes"
    Then the exit code is 2

  Scenario: two plans in one workspace are each shown, corrected and resumed by --plan
    Given a plan file "alpha.yaml" with:
      """
      name: alpha
      decisions:
        - id: one
          run: echo alpha > alpha.txt
      """
    And a plan file "beta.yaml" with:
      """
      name: beta
      decisions:
        - id: two
          run: echo beta > beta.txt
      """
    When I run "plan run <plans>/alpha.yaml"
    Then it succeeds
    When I run "plan run <plans>/beta.yaml"
    Then it succeeds
    When I run "plan --json plans"
    Then it succeeds
    And the JSON output lists 2 items
    And the JSON output has "0.name" equal to "beta"
    And the JSON output has "0.current" equal to "true"
    And the JSON output has "1.name" equal to "alpha"
    And the JSON output has "1.decisions.succeeded" equal to "1"
    When I run "plan --json status --plan alpha"
    Then it succeeds
    And the JSON output has "decisions.0.id" equal to "one"
    # Without --plan, the decision names its plan: alpha is the one plan with a decision one.
    When I run "plan --json correct --decision one --reason 'wrong' --dry-run"
    Then it succeeds
    And the JSON output has "reverted_decisions" equal to "["one"]"
    When I run "plan --json correct --plan alpha --decision one --reason 'wrong' --no-reexecute --yes"
    Then it succeeds
    And the JSON output has "reverted_decisions" equal to "["one"]"
    And "alpha.txt" does not exist
    # beta's decision ran after alpha's: the workspace went back to before both.
    And "beta.txt" does not exist
    When I run "plan --json status --plan alpha"
    Then the JSON output has "decisions.0.status" equal to "reverted"
    When I run "plan --json status --plan beta"
    Then the JSON output has "decisions.0.status" equal to "reverted"
    When I run "plan --json status"
    Then the JSON output has "plan.name" equal to "beta"
    When I run "plan run <plans>/alpha.yaml"
    Then it succeeds
    And the file "alpha.txt" contains "alpha\n"
    When I run "plan run <plans>/beta.yaml"
    Then it succeeds
    And the file "beta.txt" contains "beta\n"
    When I run "plan status --plan nope"
    Then the exit code is 4
    And stderr contains "plan plans"

  Scenario: a decision retries from its pre_decision checkpoint until it succeeds
    Given an initialised workspace
    And a plan file "flaky.yaml" with:
      """
      name: flaky
      decisions:
        - id: flaky
          retries: 2
          run: echo attempt > leftover-$PLAN_ATTEMPT.txt; [ "$PLAN_ATTEMPT" -ge 2 ]
      """
    When I run "plan run <plans>/flaky.yaml"
    Then it succeeds
    And stderr contains "retrying flaky"
    And "leftover-1.txt" does not exist
    And "leftover-2.txt" exists
    When I run "plan --json status"
    Then the JSON output has decision "flaky" with attempts:
      | attempt | status    |
      | 1       | reverted  |
      | 2       | succeeded |

  Scenario: a failed validation fails the decision; on_failure continue goes on to the next
    Given an initialised workspace
    And a plan file "checked.yaml" with:
      """
      name: checked
      decisions:
        - id: build
          on_failure: continue
          run: echo broken > out.txt
          validate: grep -qx ok out.txt
        - id: report
          run: echo report > report.txt
      """
    When I run "plan run <plans>/checked.yaml"
    Then the exit code is 1
    And stderr contains "failed its validation"
    And the file "report.txt" contains "report\n"
    When I run "plan --json status"
    Then the JSON output has decision "build" with attempts:
      | attempt | status |
      | 1       | failed |

  Scenario: rollback --validate that fails leaves the workspace restored and names the undo
    Given an initialised workspace
    And a file "a.txt" containing "one\n"
    And a checkpoint "one"
    And I change "a.txt" to "two\n"
    When I run "plan --json rollback --to-checkpoint <one> --yes --validate false"
    Then the exit code is 1
    And the JSON error has "error.kind" equal to "validation_failed"
    And the file "a.txt" contains "one\n"
    When I run "plan undo --yes"
    Then it succeeds
    And the file "a.txt" contains "two\n"
