Feature: Surgical revert
  `plan revert --decision ID --reason TEXT` undoes one decision's changes and keeps what later
  decisions, and the user, did since: every path the decision changed gets its state from before the
  decision back, a path changed since is merged line by line, and nothing is re-executed. Overlapping
  changes, binary files and kind changes are conflicts: by default the revert then changes nothing
  (exit 5) and lists them; with --conflicts markers it writes diff3 markers into conflicting text files
  and a conflicting binary's state from before the decision beside it as PATH.reverted.

  In the plan below, tune is the wrong decision: it changes the port in config.yaml; build appends to
  main.go and changes the log level further down config.yaml.

  Background:
    Given a workspace
    And a plan file "app.yaml" with:
      """
      name: app
      decisions:
        - id: setup
          run: |
            echo 'package main' > main.go && printf 'name: app\nport: 80\nmode: dev\nworkers: 1\nlog: info\n' > config.yaml
        - id: tune
          run: |
            sed 's/port: 80/port: 8080/' config.yaml > c.tmp && mv c.tmp config.yaml
        - id: build
          run: |
            echo '// built' >> main.go && sed 's/log: info/log: debug/' config.yaml > c.tmp && mv c.tmp config.yaml
      """
    And a plan file "assets.yaml" with:
      """
      name: assets
      decisions:
        - id: draw
          run: |
            printf 'logo\000v1' > logo.bin
        - id: redraw
          run: |
            printf 'logo\000v2' > logo.bin
        - id: touch-up
          run: |
            printf 'logo\000v3' > logo.bin
      """
    And a plan file "notes.yaml" with:
      """
      name: notes
      decisions:
        - id: write
          run: |
            printf 'first\nsecond\n' > notes.txt
        - id: drop
          run: rm notes.txt
        - id: rewrite
          run: |
            printf 'fresh\n' > notes.txt
      """

  Scenario: reverting a middle decision keeps the later decision's edits and re-executes nothing
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    When I run "plan --json revert --decision tune --reason 'the port must stay 80' --yes"
    Then it succeeds
    And the JSON output has "status" equal to "reverted"
    And the JSON output has "kind" equal to "surgical"
    And the JSON output has "paths" with exactly:
      | path        | action |
      | config.yaml | merge  |
    And I remember the JSON output "correction_id" as "fix"
    And the file "config.yaml" contains "name: app\nport: 80\nmode: dev\nworkers: 1\nlog: debug\n"
    And the file "main.go" contains "package main\n// built\n"
    And the archive of correction "fix" holds exactly:
      | decision_id | attempt | path        | change   | content                                                    |
      | tune        | 1       | config.yaml | modified | name: app\nport: 8080\nmode: dev\nworkers: 1\nlog: info\n |
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt |
      | setup | succeeded | 1       |
      | tune  | reverted  | 1       |
      | build | succeeded | 1       |
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "kind" equal to "surgical"
    And the JSON output has "reverted_decisions" equal to "["tune"]"
    And the JSON output has "needs_attention" equal to "false"

  Scenario: --run replaces the reverted decision with a new attempt, and later decisions are not run again
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    When I run "plan --json revert --decision tune --reason 'the port must be 81' --run 'sed s/80/81/ config.yaml > c.tmp && mv c.tmp config.yaml' --yes"
    Then it succeeds
    And the JSON output has "status" equal to "reverted"
    And the JSON output has "reexecuted_decisions" equal to "["tune"]"
    And I remember the JSON output "correction_id" as "fix"
    And the file "config.yaml" contains "name: app\nport: 81\nmode: dev\nworkers: 1\nlog: debug\n"
    And the file "main.go" contains "package main\n// built\n"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    | attempt |
      | setup | succeeded | 1       |
      | tune  | succeeded | 2       |
      | build | succeeded | 1       |
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "status" equal to "succeeded"
    And the JSON output has "kind" equal to "surgical"

  Scenario: a dry run shows the per-path plan and changes nothing
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    And I remember the workspace as "before"
    When I run "plan revert --decision build --reason 'not yet' --dry-run"
    Then it succeeds
    And stdout contains "  restore  config.yaml"
    And stdout contains "  restore  main.go"
    And stdout contains "nothing was changed"
    And the workspace equals "before"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 0 items

  Scenario: reverting a decision nothing changed since restores its paths exactly
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    When I run "plan revert --decision build --reason 'not yet' --yes"
    Then it succeeds
    And stdout contains "  restore  main.go"
    And the file "main.go" contains "package main\n"
    And the file "config.yaml" contains "name: app\nport: 8080\nmode: dev\nworkers: 1\nlog: info\n"

  Scenario: a conflicting revert is refused and changes nothing
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    And I change "config.yaml" to "name: app\nport: 9090\nmode: dev\nworkers: 1\nlog: debug\n"
    And I remember the workspace as "before"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And I remember the output as "checkpoints"
    When I run "plan revert --decision tune --reason 'the port must stay 80' --yes"
    Then the exit code is 5
    And stdout contains "  conflict config.yaml: changed since the decision in overlapping lines"
    And stderr contains "nothing was changed"
    And the workspace equals "before"
    When I run "plan --json checkpoint list"
    Then it succeeds
    And the output equals the one remembered as "checkpoints"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    |
      | setup | succeeded |
      | tune  | succeeded |
      | build | succeeded |

  Scenario: with --conflicts markers a conflicting text file gets diff3 markers, and the safety checkpoint undoes it
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    And I change "config.yaml" to "name: app\nport: 9090\nmode: dev\nworkers: 1\nlog: debug\n"
    And I remember the workspace as "before"
    When I run "plan --json revert --decision tune --reason 'the port must stay 80' --conflicts markers --yes"
    Then it succeeds
    And the JSON output has "status" equal to "needs_attention"
    And the JSON output has "conflicts" with exactly:
      | path        | written     |
      | config.yaml | config.yaml |
    And I remember the JSON output "correction_id" as "fix"
    And I remember the JSON output "safety_checkpoint_id" as "safety"
    And the file "config.yaml" contains "name: app\n<<<<<<< live\nport: 9090\n||||||| after tune\nport: 8080\n=======\nport: 80\n>>>>>>> before tune\nmode: dev\nworkers: 1\nlog: debug\n"
    When I run "plan --json correction show <fix>"
    Then it succeeds
    And the JSON output has "needs_attention" equal to "true"
    And the JSON output has "conflicts.0.path" equal to "config.yaml"
    When I run "plan rollback --to-checkpoint <safety> --yes"
    Then it succeeds
    And the workspace equals "before"

  Scenario: a binary file changed since is a conflict; markers put its state from before beside it
    Given I run "plan run <plans>/assets.yaml"
    And it succeeds
    And I remember the workspace as "before"
    When I run "plan revert --decision redraw --reason 'the old logo was right' --yes"
    Then the exit code is 5
    And stdout contains "  conflict logo.bin: binary file changed since the decision"
    And the workspace equals "before"
    When I run "plan --json revert --decision redraw --reason 'the old logo was right' --conflicts markers --yes"
    Then it succeeds
    And the JSON output has "conflicts" with exactly:
      | path     | why                                   | written           |
      | logo.bin | binary file changed since the decision | logo.bin.reverted |
    And the JSON output has "needs_attention" equal to "true"
    And "logo.bin.reverted" exists

  Scenario: a file the decision deleted and later decisions recreated is a conflict
    Given I run "plan run <plans>/notes.yaml"
    And it succeeds
    When I run "plan revert --decision drop --reason 'keep the notes' --yes"
    Then the exit code is 5
    And stdout contains "  conflict notes.txt: deleted by the decision and recreated since"
    And the file "notes.txt" contains "fresh\n"
    When I run "plan revert --decision drop --reason 'keep the notes' --conflicts markers --yes"
    Then it succeeds
    And the file "notes.txt" contains "<<<<<<< live\nfresh\n||||||| after drop\n=======\nfirst\nsecond\n>>>>>>> before drop\n"
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id      | status    |
      | write   | succeeded |
      | drop    | reverted  |
      | rewrite | succeeded |

  Scenario: a decision whose file later work deleted again is restored when nothing else changed
    Given I run "plan run <plans>/notes.yaml"
    And it succeeds
    When I run "plan revert --decision rewrite --reason 'no fresh notes' --yes"
    Then it succeeds
    And "notes.txt" does not exist
    When I run "plan revert --decision drop --reason 'keep the notes' --yes"
    Then it succeeds
    And stdout contains "  restore  notes.txt"
    And the file "notes.txt" contains "first\nsecond\n"

  Scenario: a revert killed while restoring files is completed by plan recover
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    When I run "plan revert --decision tune --reason 'the port must stay 80' --yes" with the failpoint "restore.write"
    Then the process was killed
    And "<history>/journal.json" exists
    When I run "plan recover --json"
    Then it succeeds
    And the JSON output has "outcome" equal to "completed"
    And the file "config.yaml" contains "name: app\nport: 80\nmode: dev\nworkers: 1\nlog: debug\n"
    And the file "main.go" contains "package main\n// built\n"
    When I run "plan --json correction list"
    Then it succeeds
    And the JSON output lists 1 item
    And the JSON output has "0.kind" equal to "surgical"

  Scenario: a revert whose record fails is undone entirely
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    And I remember the workspace as "before"
    When I run "plan revert --decision tune --reason 'the port must stay 80' --yes" with the failpoint "revert.applied=error"
    Then the exit code is not 0
    And stderr contains "injected failure"
    And the workspace equals "before"
    And "<history>/archive" holds no visible entries
    When I run "plan status --json"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    |
      | setup | succeeded |
      | tune  | succeeded |
      | build | succeeded |

  Scenario: a full correction that would roll back past a surgical revert is refused
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    When I run "plan revert --decision tune --reason 'the port must stay 80' --yes"
    Then it succeeds
    And I remember the workspace as "after-revert"
    When I run "plan correct --decision build --reason 'wrong log level' --yes --no-reexecute"
    Then the exit code is 5
    And stderr contains "use `plan revert --decision build` instead"
    And the workspace equals "after-revert"
    When I run "plan revert --decision build --reason 'wrong log level' --yes"
    Then it succeeds
    And the file "config.yaml" contains "name: app\nport: 80\nmode: dev\nworkers: 1\nlog: info\n"
    And the file "main.go" contains "package main\n"

  Scenario: --plan reverts a decision of a plan that is not the current one, which stays current
    Given I run "plan run <plans>/app.yaml"
    And it succeeds
    And I run "plan run <plans>/notes.yaml"
    And it succeeds
    When I run "plan revert --plan app --decision tune --reason 'the port must stay 80' --yes"
    Then it succeeds
    And the file "config.yaml" contains "name: app\nport: 80\nmode: dev\nworkers: 1\nlog: debug\n"
    And the file "notes.txt" contains "fresh\n"
    When I run "plan --json plans"
    Then it succeeds
    And the JSON output has "0.name" equal to "notes"
    And the JSON output has "0.current" equal to "true"
    When I run "plan --json status --plan app"
    Then it succeeds
    And the JSON output has "decisions" with exactly:
      | id    | status    |
      | setup | succeeded |
      | tune  | reverted  |
      | build | succeeded |
