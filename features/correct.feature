Feature: Corrections
  `plan correct --decision ID --reason TEXT` is plan's headline: when a decision turns out wrong, it
  reverts that decision and every decision executed after it, keeps what they produced in an archive,
  rolls the workspace back atomically to the decision's pre_decision checkpoint and re-executes from
  there (with --run replacing the wrong command). Afterwards the workspace is as if the corrected plan
  had run from scratch, and nothing is lost: the archive holds the wrong outputs, and the correction's
  safety checkpoint undoes it.

  In the plan below, configure is the wrong decision: it sets production, deletes legacy.txt and
  makes src/main.txt executable; build uses what configure wrote.

  Background:
    Given a workspace
    And a plan file "site.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          name: Scaffold the sources
          run: mkdir -p src docs && echo main > src/main.txt && echo old > legacy.txt && echo guide > docs/guide.txt && chmod 600 legacy.txt
        - id: configure
          name: Configure the build
          run: echo env=production > config.txt && rm legacy.txt && echo debug=false >> src/main.txt && chmod 755 src/main.txt
        - id: build
          name: Build the site
          run: mkdir -p out/cache && cat config.txt src/main.txt > out/site.txt && ln -s out/site.txt current
      """
    And a plan file "site-fixed.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          name: Scaffold the sources
          run: mkdir -p src docs && echo main > src/main.txt && echo old > legacy.txt && echo guide > docs/guide.txt && chmod 600 legacy.txt
        - id: configure
          name: Configure the build
          run: echo env=development > config.txt && echo debug=true >> src/main.txt
        - id: build
          name: Build the site
          run: mkdir -p out/cache && cat config.txt src/main.txt > out/site.txt && ln -s out/site.txt current
      """
    And a plan file "site-scaffold.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          name: Scaffold the sources
          run: mkdir -p src docs && echo main > src/main.txt && echo old > legacy.txt && echo guide > docs/guide.txt && chmod 600 legacy.txt
      """
    And I run "plan run <plans>/site.yaml"
    And it succeeds
    And the file "out/site.txt" contains "env=production\nmain\ndebug=false\n"
    And I run "plan status --json"
    And it succeeds
    And I remember the JSON output "decisions.1.checkpoint_id" as "cp-configure"
    And I remember the JSON output "decisions.2.checkpoint_id" as "cp-build"
    And I remember the workspace as "before-correction"

  Scenario: a corrected decision leaves the workspace as if the corrected plan had run from scratch
    When I run "plan --json correct --decision configure --reason 'deployed to production' --run 'echo env=development > config.txt && echo debug=true >> src/main.txt' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    And the JSON output has "status" equal to "succeeded"
    And the JSON output has "reverted_decisions" equal to "["configure","build"]"
    And the JSON output has "reexecuted_decisions" equal to "["configure","build"]"
    And the tree a fresh workspace has after "plan run <plans>/site-fixed.yaml" is remembered as "from-scratch"
    And the workspace equals "from-scratch"
    And the file "out/site.txt" contains "env=development\nmain\ndebug=true\n"
    And the file "legacy.txt" contains "old\n"
    And "out/cache" is a directory
    And the archive of correction "fix" holds exactly:
      | decision_id | attempt | path         | change   | content                              | mode |
      | configure   | 1       | config.txt   | added    | env=production\n                     |      |
      | configure   | 1       | legacy.txt   | deleted  | old\n                                |      |
      | configure   | 1       | src/main.txt | modified | main\ndebug=false\n                  | 0755 |
      | build       | 1       | out/site.txt | added    | env=production\nmain\ndebug=false\n  |      |
      | build       | 1       | current      | added    | out/site.txt                         |      |
      | build | 1 | out/cache | added dir |  |  |
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    | attempt | exit_code |
      | scaffold  | succeeded | 1       | 0         |
      | configure | succeeded | 2       | 0         |
      | build     | succeeded | 2       | 0         |
    And the JSON output has decision "scaffold" with attempts:
      | attempt | status    | reverted_by |
      | 1       | succeeded | (absent)    |
    And the JSON output has decision "configure" with attempts:
      | attempt | status    | reverted_by | checkpoint_id  | command                                                                                       |
      | 1       | reverted  | <fix>       | <cp-configure> | echo env=production > config.txt && rm legacy.txt && echo debug=false >> src/main.txt && chmod 755 src/main.txt |
      | 2       | succeeded | (absent)    | (set)          | echo env=development > config.txt && echo debug=true >> src/main.txt                            |
    And the JSON output has decision "build" with attempts:
      | attempt | status    | reverted_by | checkpoint_id |
      | 1       | reverted  | <fix>       | <cp-build>    |
      | 2       | succeeded | (absent)    | (set)         |
    And the JSON output has decision "configure" with artifacts:
      | path         | change   | content            |
      | config.txt   | added    | env=development\n  |
      | src/main.txt | modified | main\ndebug=true\n |
    And the JSON output has decision "build" with artifacts:
      | path         | change | content                             |
      | out/site.txt | added  | env=development\nmain\ndebug=true\n |
      | current      | added  | out/site.txt                        |
      | out/cache | added dir |  |
    And every decision's checkpoint_id in the JSON output names its pre_decision checkpoint

  Scenario: the correction reports every field of the contract
    When I run "plan correct --json --decision configure --reason 'deployed to production' --run 'echo env=development > config.txt' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    And I remember the JSON output "safety_checkpoint_id" as "safety"
    And the JSON output has "correction_id" matching "^[0-9a-f]{24}$"
    And the JSON output has "decision_id" equal to "configure"
    And the JSON output has "reason" equal to "deployed to production"
    And the JSON output has "reverted_decisions" equal to "["configure","build"]"
    And the JSON output has "rollback_checkpoint_id" equal to "<cp-configure>"
    And the JSON output has "archive_dir" equal to "<history>/archive/<fix>"
    And the JSON output has "reexecuted_decisions" equal to "["configure","build"]"
    And the JSON output has "status" equal to "succeeded"
    When I run "plan --json checkpoint show <safety>"
    Then it succeeds
    And the JSON output has "type" equal to "pre_correction"
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "correction_id" equal to "<fix>"
    And the JSON output has "decision_id" equal to "configure"
    And the JSON output has "reason" equal to "deployed to production"
    And the JSON output has "reverted_decisions" equal to "["configure","build"]"
    And the JSON output has "safety_checkpoint_id" equal to "<safety>"
    And the JSON output has "rollback_checkpoint_id" equal to "<cp-configure>"
    And the JSON output has "archive_dir" equal to "<history>/archive/<fix>"
    And the JSON output has "reexecuted_decisions" equal to "["configure","build"]"
    And the JSON output has "status" equal to "succeeded"
    When I run "plan correction show <fix:4>"
    Then it succeeds
    And stdout contains "correction <fix> of configure: succeeded"
    And stdout contains "deployed to production"

  Scenario: correcting the last decision reverts only that decision
    When I run "plan --json correct --decision build --reason 'link the wrong way' --run 'mkdir -p out && cat config.txt > out/site.txt' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    And the JSON output has "reverted_decisions" equal to "["build"]"
    And the JSON output has "reexecuted_decisions" equal to "["build"]"
    And the JSON output has "rollback_checkpoint_id" equal to "<cp-build>"
    And the file "out/site.txt" contains "env=production\n"
    And "current" does not exist
    And "out/cache" does not exist
    And the file "config.txt" contains "env=production\n"
    And the archive of correction "fix" holds exactly:
      | decision_id | attempt | path         | change | content                             |
      | build       | 1       | out/site.txt | added  | env=production\nmain\ndebug=false\n |
      | build       | 1       | current      | added  | out/site.txt                        |
      | build | 1 | out/cache | added dir |  |
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    | attempt |
      | scaffold  | succeeded | 1       |
      | configure | succeeded | 1       |
      | build     | succeeded | 2       |

  Scenario: --no-reexecute reverts and archives, and leaves the workspace at the decision's checkpoint
    When I run "plan --json correct --decision configure --reason 'wrong environment' --no-reexecute --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    And the JSON output has "status" equal to "reverted"
    And the JSON output has "reexecuted_decisions" equal to "[]"
    And the tree a fresh workspace has after "plan run <plans>/site-scaffold.yaml" is remembered as "after-scaffold"
    And the workspace equals "after-scaffold"
    When I run "plan --json diff <cp-configure>"
    Then it succeeds
    And the JSON output has 0 "changes"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    | attempt |
      | scaffold  | succeeded | 1       |
      | configure | reverted  | 1       |
      | build     | reverted  | 1       |
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "status" equal to "reverted"
    And the archive of correction "fix" holds exactly:
      | decision_id | path         | change   | content                             |
      | configure   | config.txt   | added    | env=production\n                    |
      | configure   | legacy.txt   | deleted  | old\n                               |
      | configure   | src/main.txt | modified | main\ndebug=false\n                 |
      | build       | out/site.txt | added    | env=production\nmain\ndebug=false\n |
      | build       | current      | added    | out/site.txt                        |
      | build | out/cache | added dir |  |

  Scenario: after --no-reexecute, running the plan again re-executes the reverted decisions
    When I run "plan correct --decision configure --reason 'run it again later' --no-reexecute --yes"
    Then it succeeds
    When I run "plan run <plans>/site-fixed.yaml"
    Then it succeeds
    And the tree a fresh workspace has after "plan run <plans>/site-fixed.yaml" is remembered as "from-scratch"
    And the workspace equals "from-scratch"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    | attempt |
      | scaffold  | succeeded | 1       |
      | configure | succeeded | 2       |
      | build     | succeeded | 2       |

  Scenario: a re-execution that fails fails the correction, and the revert stays recorded
    When I run "plan correct --decision configure --reason 'deployed to production' --run 'exit 7' --yes"
    Then the exit code is not 0
    And stderr contains "decision \"configure\" failed with exit code 7"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 1 item
    And I remember the JSON output "0.correction_id" as "fix"
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "status" equal to "failed"
    And the JSON output has "reverted_decisions" equal to "["configure","build"]"
    And the JSON output has "reexecuted_decisions" equal to "["configure"]"
    And the tree a fresh workspace has after "plan run <plans>/site-scaffold.yaml" is remembered as "after-scaffold"
    And the workspace equals "after-scaffold"
    And the archive of correction "fix" holds exactly:
      | decision_id | path         | change   | content                             |
      | configure   | config.txt   | added    | env=production\n                    |
      | configure   | legacy.txt   | deleted  | old\n                               |
      | configure   | src/main.txt | modified | main\ndebug=false\n                 |
      | build       | out/site.txt | added    | env=production\nmain\ndebug=false\n |
      | build       | current      | added    | out/site.txt                        |
      | build | out/cache | added dir |  |
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has decision "configure" with attempts:
      | attempt | status   | reverted_by | exit_code |
      | 1       | reverted | <fix>       | 0         |
      | 2       | failed   | (absent)    | 7         |
    And the JSON output has decision "build" with attempts:
      | attempt | status   | reverted_by |
      | 1       | reverted | <fix>       |

  Scenario: --dry-run shows the scope and the files, and changes nothing
    Given I run "plan status --json"
    And it succeeds
    And I remember the output as "status"
    And I run "plan checkpoint list --json"
    And it succeeds
    And I remember the output as "checkpoints"
    When I run "plan correct --decision configure --reason 'deployed to production' --dry-run"
    Then it succeeds
    And stdout contains "configure (attempt 1), build (attempt 1)"
    And stdout contains "A configure/config.txt"
    And stdout contains "D configure/legacy.txt"
    And stdout contains "M configure/src/main.txt"
    And stdout contains "A build/out/site.txt"
    And stdout contains "A build/current"
    And stdout contains "<cp-configure>"
    And the workspace equals "before-correction"
    When I run "plan --json correct --decision configure --reason 'deployed to production' --dry-run"
    Then it succeeds
    And the JSON output has "dry_run" equal to "true"
    And the JSON output has "correction_id" equal to "null"
    And the JSON output has "reverted_decisions" equal to "["configure","build"]"
    And the JSON output has "rollback_checkpoint_id" equal to "<cp-configure>"
    And the workspace equals "before-correction"
    When I run "plan status --json"
    Then it succeeds
    And the output equals the one remembered as "status"
    When I run "plan checkpoint list --json"
    Then it succeeds
    And the output equals the one remembered as "checkpoints"
    When I run "plan correction list --json"
    Then it succeeds
    And the JSON output lists 0 items
    And "<history>/archive" is an empty directory

  Scenario: without --yes and without a terminal, correct refuses and changes nothing
    When I run "plan correct --decision configure --reason 'deployed to production'"
    Then the exit code is 2
    And stderr contains "--yes"
    And the workspace equals "before-correction"
    When I run "plan correction list --json"
    Then it succeeds
    And the JSON output lists 0 items

  Scenario: answering no at the prompt changes nothing
    Given I run "plan status --json"
    And it succeeds
    And I remember the output as "status"
    When I will answer "n"
    And I run "plan correct --decision configure --reason 'deployed to production'"
    Then the exit code is 8
    And stderr contains "Continue? [y/N]"
    And stderr contains "A configure/config.txt"
    And the workspace equals "before-correction"
    When I run "plan correction list --json"
    Then it succeeds
    And the JSON output lists 0 items
    When I run "plan status --json"
    Then it succeeds
    And the output equals the one remembered as "status"

  Scenario: answering yes at the prompt corrects
    When I will answer "y"
    And I run "plan correct --decision configure --reason 'deployed to production' --no-reexecute"
    Then it succeeds
    And stderr contains "Continue? [y/N]"
    And "config.txt" does not exist
    And the file "legacy.txt" contains "old\n"

  Scenario Outline: a correction is refused when <case>
    When I run "<command>"
    Then the exit code is <code>
    And stderr contains "<message>"
    And the workspace equals "before-correction"
    When I run "plan correction list --json"
    Then it succeeds
    And the JSON output lists 0 items

    Examples:
      | case                          | command                                                  | code | message    |
      | the decision is unknown       | plan correct --decision nope --reason 'wrong' --yes      | 4    | nope       |
      | the reason is missing         | plan correct --decision configure --yes                  | 2    | --reason   |
      | the decision is missing       | plan correct --reason 'wrong' --yes                      | 2    | --decision |
      | the decision ID is malformed  | plan correct --decision Bad.ID --reason 'wrong' --yes    | 3    | Bad.ID     |

  Scenario: a pending decision, which a killed run never reached, cannot be corrected
    Given a plan file "more.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          run: "true"
        - id: configure
          run: "true"
        - id: build
          run: "true"
        - id: deploy
          run: echo started > marker.txt && sleep 30
        - id: announce
          run: echo announced > announced.txt
      """
    When I start "plan run <plans>/more.yaml" and kill it once "marker.txt" exists
    Then the process was killed
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" including:
      | id       | status      |
      | deploy   | interrupted |
      | announce | pending     |
    And I remember the workspace as "after-deploy"
    When I run "plan correct --decision announce --reason 'never ran' --yes"
    Then the exit code is 5
    And stderr contains "not executed"
    And the workspace equals "after-deploy"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 0 items

  Scenario: a skipped decision, which a failed run never reached, cannot be corrected
    Given a plan file "more.yaml" with:
      """
      name: site
      decisions:
        - id: scaffold
          run: "true"
        - id: configure
          run: "true"
        - id: build
          run: "true"
        - id: deploy
          run: exit 1
        - id: announce
          run: echo announced > announced.txt
      """
    When I run "plan run <plans>/more.yaml"
    Then the exit code is not 0
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" including:
      | id       | status  |
      | deploy   | failed  |
      | announce | skipped |
    And I remember the workspace as "after-deploy"
    When I run "plan correct --decision announce --reason 'never ran' --yes"
    Then the exit code is 5
    And stderr contains "not executed"
    And the workspace equals "after-deploy"

  Scenario: a decision that is already reverted cannot be corrected again
    When I run "plan correct --decision configure --reason 'wrong environment' --no-reexecute --yes"
    Then it succeeds
    And I remember the workspace as "reverted"
    When I run "plan correct --decision configure --reason 'again' --yes"
    Then the exit code is 5
    And stderr contains "already reverted"
    When I run "plan correct --decision build --reason 'again' --yes"
    Then the exit code is 5
    And the workspace equals "reverted"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 1 item

  Scenario: corrections are listed newest first and found by a unique prefix
    When I run "plan --json correct --decision build --reason 'first' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "first"
    When I run "plan --json correct --decision configure --reason 'second' --yes"
    Then it succeeds
    And I remember the JSON output "correction_id" as "second"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 2 items
    And the JSON output has "0.correction_id" equal to "<second>"
    And the JSON output has "0.reason" equal to "second"
    And the JSON output has "1.correction_id" equal to "<first>"
    And the JSON output has "1.reason" equal to "first"
    When I run "plan correction list"
    Then it succeeds
    And stdout contains "<second>"
    When I run "plan --json correction show <second:20>"
    Then it succeeds
    And the JSON output has "correction_id" equal to "<second>"
    When I run "plan correction show 0123456789ab"
    Then the exit code is 4

  Scenario: a correction is undone by rolling back to its safety checkpoint
    When I run "plan --json correct --decision configure --reason 'deployed to production' --run 'echo env=development > config.txt' --yes"
    Then it succeeds
    And I remember the JSON output "safety_checkpoint_id" as "safety"
    And the file "config.txt" contains "env=development\n"
    When I run "plan rollback --to-checkpoint <safety> --yes"
    Then it succeeds
    And the workspace equals "before-correction"

  Scenario: a correction killed while restoring files is completed by plan recover
    When I run "plan correct --decision configure --reason 'deployed to production' --yes --no-reexecute" with the failpoint "restore.write"
    Then the process was killed
    And "<history>/journal.json" exists
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "recovered" equal to "true"
    And the JSON output has "outcome" equal to "completed"
    And I remember the JSON output "operation" as "fix"
    And the tree a fresh workspace has after "plan run <plans>/site-scaffold.yaml" is remembered as "after-scaffold"
    And the workspace equals "after-scaffold"
    And the archive of correction "fix" holds exactly:
      | decision_id | path         | change   | content                             |
      | configure   | config.txt   | added    | env=production\n                    |
      | configure   | legacy.txt   | deleted  | old\n                               |
      | configure   | src/main.txt | modified | main\ndebug=false\n                 |
      | build       | out/site.txt | added    | env=production\nmain\ndebug=false\n |
      | build       | current      | added    | out/site.txt                        |
      | build | out/cache | added dir |  |
    And "<history>/archive" holds only "<fix>"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.correction_id" equal to "<fix>"
    And the JSON output has "0.status" equal to "reverted"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    |
      | scaffold  | succeeded |
      | configure | reverted  |
      | build     | reverted  |

  Scenario: a correction whose record fails is undone entirely
    When I run "plan correct --decision configure --reason 'deployed to production' --yes" with the failpoint "correction.applied=error"
    Then the exit code is not 0
    And stderr contains "injected failure"
    And the workspace equals "before-correction"
    And "<history>/archive" holds no visible entries
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 0 items
    And "<history>/archive" is an empty directory
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id        | status    | attempt |
      | scaffold  | succeeded | 1       |
      | configure | succeeded | 1       |
      | build     | succeeded | 1       |

  # The killed re-execution's attempt is closed as interrupted by the next command, but the
  # correction itself stays "reexecuting" for ever; prune then keeps its checkpoints for ever too.
  Scenario: a correction killed during re-execution is closed as failed by the next command
    When I start "plan correct --decision configure --reason 'deployed to production' --run 'echo started > marker.txt && sleep 30' --yes" and kill it once "marker.txt" exists
    Then the process was killed
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has decision "configure" with attempts:
      | attempt | status      |
      | 1       | reverted    |
      | 2       | interrupted |
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output has "0.status" equal to "failed"

  Scenario: old archives can be retired; the correction records stay, and stats count what archives hold
    When I run "plan correct --decision configure --reason 'wrong target' --run 'echo env=development > config.txt' --yes --json"
    Then it succeeds
    And I remember the JSON output "correction_id" as "fix"
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "archive_bytes" greater than 0
    When I run "plan --json correction prune --keep 0 --dry-run"
    Then it succeeds
    And the JSON output has "deleted.0" equal to "<fix>"
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "archive_bytes" greater than 0
    When I run "plan --json correction prune --keep 0"
    Then it succeeds
    And the JSON output has "bytes_freed" greater than 0
    When I run "plan --json correction show <fix>"
    Then it succeeds
    When I run "plan --json stats"
    Then it succeeds
    And the JSON output has "archive_bytes" equal to "0"
    When I run "plan correction prune"
    Then the exit code is 2
