package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
)

const claudeSession = "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"

// fixture is a payload of ../agenthooks/testdata with $CWD set to dir.
func fixture(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "agenthooks", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "$CWD", dir)
}

// hookIn runs `plan hook agent event` from dir with payload on stdin.
func hookIn(dir, payload string, args ...string) outcome {
	return invoke(Runner{Stdin: strings.NewReader(payload), Dir: dir}, append([]string{"hook"}, args...)...)
}

// quietHook runs a hook that must answer nothing and exit 0.
func quietHook(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	if o := hookIn(dir, fixture(t, dir, name), args...); o.code != 0 || o.stdout != "" || o.stderr != "" {
		t.Fatalf("%s: %v", name, o)
	}
}

// claudeTurn records a Claude Code turn: a README written, build/ removed through Bash.
func claudeTurn(t *testing.T) string {
	t.Helper()
	dir := newWorkspace(t)
	writeFile(t, dir, "build/a.o", "object")
	writeFile(t, dir, "main.go", "package main\n")
	quietHook(t, dir, "claude-UserPromptSubmit", "claude", "UserPromptSubmit")
	quietHook(t, dir, "claude-PreToolUse-Read", "claude", "PreToolUse")
	quietHook(t, dir, "claude-PreToolUse-Write", "claude", "PreToolUse")
	writeFile(t, dir, "README.md", "# Project\n")
	quietHook(t, dir, "claude-PostToolUse-Write", "claude", "PostToolUse")
	quietHook(t, dir, "claude-PreToolUse-Bash", "claude", "PreToolUse")
	if err := os.RemoveAll(filepath.Join(dir, "build")); err != nil {
		t.Fatal(err)
	}
	quietHook(t, dir, "claude-PostToolUse-Bash", "claude", "PostToolUse")
	quietHook(t, dir, "claude-Stop", "claude", "Stop")
	return dir
}

func sessionsOf(t *testing.T, dir string, args ...string) view.Sessions {
	t.Helper()
	o := mustPlan(t, dir, append([]string{"--json", "sessions"}, args...)...)
	var v view.Sessions
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil {
		t.Fatalf("%v: %v", o, err)
	}
	return v
}

func TestClaudeSessionIsRecordedAndRewound(t *testing.T) {
	dir := claudeTurn(t)
	v := sessionsOf(t, dir)
	if len(v.Sessions) != 1 || v.Sessions[0].Plan != claudeSession || len(v.Sessions[0].Turns) != 1 {
		t.Fatalf("sessions: %+v", v)
	}
	turn := v.Sessions[0].Turns[0]
	if turn.Prompt != "Clean up the build directory and add a README" || turn.EndCheckpoint == nil || len(turn.ToolCalls) != 2 {
		t.Fatalf("turn: %+v", turn)
	}
	write, bash := turn.ToolCalls[0], turn.ToolCalls[1]
	if write.ID != "toolu_01HxW7kqT3oAbvR4yNcD8sLm" || write.Tool != "Write" || write.Status != "succeeded" ||
		len(write.Files) != 1 || write.Files[0].Path != "README.md" {
		t.Fatalf("write call: %+v", write)
	}
	if bash.Summary != "Bash: rm -rf build" || len(bash.Files) != 1 || bash.Files[0].Path != "build/a.o" {
		t.Fatalf("bash call: %+v", bash)
	}
	text := mustPlan(t, dir, "sessions").stdout
	for _, want := range []string{claudeSession, "turn 1  Clean up the build", "Bash: rm -rf build", "README.md"} {
		if !strings.Contains(text, want) {
			t.Errorf("sessions text lacks %q:\n%s", want, text)
		}
	}
	if o := mustPlan(t, dir, "sessions", "7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"); !strings.Contains(o.stdout, claudeSession) {
		t.Errorf("by session ID: %v", o)
	}
	status := mustPlan(t, dir, "status", "--plan", claudeSession).stdout
	if !strings.Contains(status, "toolu_01Q2pZr8VbN5mKc3tYxE7wJd") {
		t.Errorf("status --plan: %s", status)
	}

	// The diff of a turn and of a tool call, by their scoped names.
	if o := mustPlan(t, dir, "diff", "--name-only", claudeSession+"#1^", claudeSession+"#1"); !strings.Contains(o.stdout, "README.md") || !strings.Contains(o.stdout, "build/a.o") {
		t.Errorf("turn diff: %v", o)
	}
	if o := mustPlan(t, dir, "diff", "--name-only", claudeSession+"/toolu_01Q2pZr8VbN5mKc3tYxE7wJd^", claudeSession+"/toolu_01Q2pZr8VbN5mKc3tYxE7wJd"); strings.TrimSpace(o.stdout) != "build\nbuild/a.o" {
		t.Errorf("tool call diff: %v", o)
	}

	// Dry run changes nothing.
	if o := mustPlan(t, dir, "rewind", "--session", claudeSession, "--tool-call", "toolu_01Q2pZr8VbN5mKc3tYxE7wJd", "--dry-run"); !strings.Contains(o.stdout, "Rewinding") {
		t.Errorf("dry run: %v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "build")); err == nil {
		t.Fatal("a dry run restored build/")
	}
	o := mustPlan(t, dir, "--yes", "--json", "rewind", "--session", claudeSession, "--tool-call", "toolu_01Q2pZr8VbN5mKc3tYxE7wJd")
	var rv view.Rewind
	if err := json.Unmarshal([]byte(o.stdout), &rv); err != nil || rv.ToolCall == nil || rv.Session != claudeSession || rv.Added != 1 {
		t.Fatalf("rewind: %v (%v)", o, err)
	}
	if readFile(t, dir, "build/a.o") != "object" || readFile(t, dir, "README.md") != "# Project\n" {
		t.Fatal("rewind to before the Bash call did not restore build/ or lost README.md")
	}
	mustPlan(t, dir, "--yes", "undo")
	if _, err := os.Stat(filepath.Join(dir, "build")); err == nil {
		t.Fatal("undo of the rewind left build/")
	}
	// Back to before the turn, files only: the decisions stay succeeded.
	o = mustPlan(t, dir, "--yes", "rewind", "--session", claudeSession, "--turn", "1", "--files")
	if !strings.Contains(o.stdout, "Rewound "+claudeSession+" to before turn 1") {
		t.Errorf("rewind --turn: %v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Fatal("rewind to before turn 1 kept README.md")
	}
	if s := sessionsOf(t, dir).Sessions[0].Turns[0].ToolCalls[0].Status; s != "succeeded" {
		t.Errorf("--files changed a decision's state: %s", s)
	}
	o = mustPlan(t, dir, "--yes", "rewind", "--session", claudeSession, "--turn", "1", "--state")
	if !strings.Contains(o.stdout, "files were left") {
		t.Errorf("rewind --state: %v", o)
	}
	if s := sessionsOf(t, dir).Sessions[0].Turns[0].ToolCalls[0].Status; s != "reverted" {
		t.Errorf("--state left the decision %s", s)
	}
	// A rollback of states only keeps no safety checkpoint: undo refuses to go past it (it would
	// undo the --files rewind instead, and leave the decision reverted); undo --to, naming the
	// entry to go back to, brings README.md back.
	if r := inWorkspace(dir, "--yes", "undo"); r.code != 5 || !strings.Contains(r.stderr, "decision states only") {
		t.Fatalf("undo past rewind --state: %v", r)
	}
	var hist []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history").stdout), &hist); err != nil || len(hist) < 3 {
		t.Fatalf("history: %v %+v", err, hist)
	}
	// Newest first: the state rewind, the files rewind, and the undo before them.
	mustPlan(t, dir, "--yes", "undo", "--to", hist[2].ID)
	if readFile(t, dir, "README.md") != "# Project\n" {
		t.Fatal("undo --to before the rewinds did not bring README.md back")
	}
	// Paths: only README.md goes back to before the turn.
	mustPlan(t, dir, "--yes", "rewind", "--session", claudeSession, "--turn", "1", "--", "README.md")
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Fatal("a per-path rewind kept README.md")
	}
}

func TestAgentToolCallsAreOutsideDecisions(t *testing.T) {
	dir := claudeTurn(t)
	o := inWorkspace(dir, "--yes", "correct", "--decision", "toolu_01Q2pZr8VbN5mKc3tYxE7wJd", "--reason", "wrong")
	if o.code != ExitConflict || !strings.Contains(o.stderr, "cannot run an agent's tool call again") {
		t.Fatalf("correct of a tool call: %v", o)
	}
	// The surgical revert of the first call keeps the later one.
	mustPlan(t, dir, "--yes", "revert", "--decision", "toolu_01HxW7kqT3oAbvR4yNcD8sLm", "--reason", "no README")
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Fatal("revert kept README.md")
	}
	if _, err := os.Stat(filepath.Join(dir, "build")); err == nil {
		t.Fatal("revert of the Write brought build/ back")
	}
	// The history lists each call as a decision, and undo undoes the last thing done.
	if h := mustPlan(t, dir, "history").stdout; !strings.Contains(h, "toolu_01Q2pZr8VbN5mKc3tYxE7wJd") {
		t.Errorf("history: %s", h)
	}
	mustPlan(t, dir, "--yes", "undo")
	if readFile(t, dir, "README.md") != "# Project\n" {
		t.Fatal("undo of the revert lost README.md")
	}
}

func TestHookRepeatsAndUnfinishedCalls(t *testing.T) {
	dir := newWorkspace(t)
	quietHook(t, dir, "claude-PreToolUse-Bash", "claude", "PreToolUse")
	quietHook(t, dir, "claude-PreToolUse-Bash", "claude", "PreToolUse") // delivered twice: recorded once
	writeFile(t, dir, "x", "1")
	// The agent stops without reporting the call's end: the turn closes, the call is interrupted.
	quietHook(t, dir, "claude-Stop", "claude", "Stop")
	v := sessionsOf(t, dir)
	calls := v.Sessions[0].Turns[0].ToolCalls
	if len(calls) != 1 || calls[0].Status != "interrupted" || len(calls[0].Files) != 1 {
		t.Fatalf("calls: %+v", calls)
	}
	// A second stop has nothing to close; a stop of a session never recorded is silent too.
	quietHook(t, dir, "claude-Stop", "claude", "Stop")
	quietHook(t, dir, "codex-Stop", "codex", "Stop")
	// The end of a call never checkpointed is a warning, and the agent goes on.
	o := hookIn(dir, fixture(t, dir, "claude-PostToolUse-Write"), "claude", "PostToolUse")
	if o.code != 0 || !strings.Contains(o.stdout, `"systemMessage"`) || !strings.Contains(o.stderr, "was not checkpointed") {
		t.Errorf("post without pre: %v", o)
	}
	// A failed call (Claude Code's PostToolUseFailure).
	quietHook(t, dir, "claude-PreToolUse-Write", "claude", "PreToolUse")
	fail := strings.Replace(fixture(t, dir, "claude-PostToolUse-Write"), `"PostToolUse"`, `"PostToolUseFailure"`, 1)
	if o := hookIn(dir, fail, "claude", "PostToolUseFailure"); o.code != 0 || o.stdout != "" {
		t.Fatalf("failure: %v", o)
	}
	v = sessionsOf(t, dir)
	if n := len(v.Sessions[0].Turns); n != 2 {
		t.Fatalf("turns: %+v", v)
	}
	if s := v.Sessions[0].Turns[1].ToolCalls[0].Status; s != "failed" {
		t.Errorf("failed call recorded %s", s)
	}
	// SessionEnd closes the open turn.
	quietHook(t, dir, "claude-SessionEnd", "claude", "SessionEnd")
	if sessionsOf(t, dir).Sessions[0].Turns[1].EndCheckpoint == nil {
		t.Error("SessionEnd left the turn open")
	}
}

func TestCodexAndGeminiSessions(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "config.py", "x = 1\n")
	quietHook(t, dir, "codex-UserPromptSubmit", "codex", "UserPromptSubmit")
	quietHook(t, dir, "codex-PreToolUse-Bash", "codex", "PreToolUse")
	if err := os.Rename(filepath.Join(dir, "config.py"), filepath.Join(dir, "settings.py")); err != nil {
		t.Fatal(err)
	}
	quietHook(t, dir, "codex-PostToolUse-Bash", "codex", "PostToolUse")
	quietHook(t, dir, "codex-Stop", "codex", "Stop")

	quietHook(t, dir, "gemini-BeforeAgent", "gemini", "BeforeAgent")
	for i := range 2 { // the same call twice: numbered apart
		quietHook(t, dir, "gemini-BeforeTool-write_file", "gemini", "BeforeTool")
		writeFile(t, dir, "hello.txt", strings.Repeat("hello\n", i+1))
		quietHook(t, dir, "gemini-AfterTool-write_file", "gemini", "AfterTool")
	}
	quietHook(t, dir, "gemini-AfterAgent", "gemini", "AfterAgent")
	v := sessionsOf(t, dir)
	if len(v.Sessions) != 2 {
		t.Fatalf("sessions: %+v", v)
	}
	var gemini, codex view.Session
	for _, s := range v.Sessions {
		if s.Agent == "gemini" {
			gemini = s
		} else {
			codex = s
		}
	}
	calls := gemini.Turns[0].ToolCalls
	if len(calls) != 2 || calls[1].ID != calls[0].ID+"-2" || calls[0].Status != "succeeded" || calls[1].Status != "succeeded" {
		t.Fatalf("gemini calls: %+v", calls)
	}
	cc := codex.Turns[0].ToolCalls
	if len(cc) != 1 || cc[0].ID != "call_Kx81bQ2mZt6pLr0aVc3Ns9Yd" || len(cc[0].Files) != 2 {
		t.Fatalf("codex calls: %+v", cc)
	}
	mustPlan(t, dir, "--yes", "rewind", "--session", "0199a5c3-8e2f-7b40-a1d2-3c4e5f607182", "--tool-call", "call_Kx81bQ2mZt6pLr0aVc3Ns9Yd", "--files")
	if readFile(t, dir, "config.py") != "x = 1\n" {
		t.Fatal("codex rewind did not bring config.py back")
	}
}

func TestHookMisuseAndFailurePolicy(t *testing.T) {
	dir := newWorkspace(t)
	pre := fixture(t, dir, "claude-PreToolUse-Bash")
	for _, tc := range []struct {
		payload string
		args    []string
		want    string
	}{
		{pre, []string{"claude"}, "wants AGENT EVENT"},
		{pre, []string{"cursor", "PreToolUse"}, "unknown agent"},
		{pre, []string{"claude", "BeforeTool"}, "unknown claude hook event"},
		{"not json", []string{"claude", "PreToolUse"}, "not a JSON object"},
		{"{", []string{"claude", "PreToolUse"}, "malformed JSON"},
		{pre, []string{"claude", "PostToolUse"}, "payload is a PreToolUse event"},
		{`{"hook_event_name":"PreToolUse","tool_name":"Bash"}`, []string{"claude", "PreToolUse"}, "no session_id"},
		{`{"session_id":"s","tool_input":{}}`, []string{"claude", "PreToolUse"}, "no tool_name"},
		{`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"x"}}`, []string{"claude", "PreToolUse"}, "no tool_use_id"},
		{`{"session_id":"s","tool_name":"Bash","tool_input":"x","tool_use_id":"t"}`, []string{"claude", "PreToolUse"}, "not a JSON object"},
	} {
		o := hookIn(dir, tc.payload, tc.args...)
		if o.code != 1 || o.stdout != "" || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%q %v: %v", tc.payload, tc.args, o)
		}
	}
	if o := inWorkspace(dir, "sessions"); !strings.Contains(o.stdout, "No agent session") {
		t.Errorf("a refused payload recorded something: %v", o)
	}
	// plan fails (a session ID it cannot name a plan after): warned, the tool runs.
	bad := strings.Replace(pre, "7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12", "bad/session", 1)
	o := hookIn(dir, bad, "claude", "PreToolUse")
	if o.code != 0 || !strings.Contains(o.stdout, `"systemMessage":"plan: could not checkpoint`) || !strings.Contains(o.stderr, "hooks.fail_closed") {
		t.Errorf("fail open: %v", o)
	}
	if o := hookIn(dir, strings.Replace(fixture(t, dir, "claude-UserPromptSubmit"), "7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12", "bad/session", 1), "claude", "UserPromptSubmit"); o.code != 0 || !strings.Contains(o.stderr, "could not record the UserPromptSubmit event") {
		t.Errorf("prompt failure: %v", o)
	}
	// Fail closed: the pre-tool call is blocked with the reason; a malformed one too.
	writeFile(t, dir, ".plan/config.yaml", readFile(t, dir, ".plan/config.yaml")+"hooks:\n  fail_closed: true\n")
	o = hookIn(dir, bad, "claude", "PreToolUse")
	if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "so it was blocked (hooks.fail_closed)") {
		t.Errorf("fail closed: %v", o)
	}
	if o := hookIn(dir, "{", "claude", "PreToolUse"); o.code != 2 || !strings.Contains(o.stderr, "blocked (hooks.fail_closed): claude PreToolUse hook: malformed") {
		t.Errorf("fail closed, malformed: %v", o)
	}
	// An event that cannot block only warns, fail closed or not.
	if o := hookIn(dir, fixture(t, dir, "claude-PostToolUse-Write"), "claude", "PostToolUse"); o.code != 0 || !strings.Contains(o.stdout, "systemMessage") {
		t.Errorf("post, fail closed: %v", o)
	}
	// A workspace that cannot be opened fails like any other failure.
	writeFile(t, dir, ".plan/config.yaml", readFile(t, dir, ".plan/config.yaml")+"nonsense: 1\n")
	if o := hookIn(dir, pre, "claude", "PreToolUse"); o.code != 0 || !strings.Contains(o.stderr, "could not checkpoint") {
		t.Errorf("broken workspace: %v", o)
	}
}

func TestHookOutsideAWorkspace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PLAN_CEILING_DIRECTORIES", filepath.Dir(dir))
	o := hookIn(dir, fixture(t, dir, "claude-PreToolUse-Bash"), "claude", "PreToolUse")
	if o.code != 0 || !strings.Contains(o.stderr, "is not in a plan workspace") || !strings.Contains(o.stdout, "systemMessage") {
		t.Errorf("pre outside a workspace: %v", o)
	}
	if o := hookIn(dir, fixture(t, dir, "claude-UserPromptSubmit"), "claude", "UserPromptSubmit"); o.code != 0 || o.stdout != "" || o.stderr != "" {
		t.Errorf("prompt outside a workspace: %v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); err == nil {
		t.Error("a hook made a workspace")
	}
}

func TestRewindRefusals(t *testing.T) {
	dir := claudeTurn(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rewind", "--turn", "1"}, ExitUsage, "missing --session"},
		{[]string{"rewind", "--session", claudeSession}, ExitUsage, "--turn N or --tool-call ID"},
		{[]string{"rewind", "--session", claudeSession, "--turn", "1", "--tool-call", "x"}, ExitUsage, "--turn N or --tool-call ID"},
		{[]string{"rewind", "--session", claudeSession, "--turn", "0"}, ExitInvalid, "--turn must be 1 or more"},
		{[]string{"rewind", "--session", claudeSession, "--turn", "1", "--files", "--state"}, ExitUsage, "one of --files, --state and --both"},
		{[]string{"rewind", "--session", "nope", "--turn", "1"}, ExitNotFound, "no agent session"},
		{[]string{"rewind", "--session", claudeSession, "--turn", "7"}, ExitNotFound, "not a turn 7"},
		{[]string{"rewind", "--session", claudeSession, "--tool-call", "toolu_nope"}, ExitNotFound, "no tool call"},
		{[]string{"rewind", "--session", claudeSession, "--turn", "1", "--", "../x"}, ExitInvalid, ""},
		{[]string{"sessions", "nope"}, ExitNotFound, "no agent session"},
		{[]string{"sessions", "a", "b"}, ExitUsage, ""},
		{[]string{"diff", claudeSession + "#9^"}, ExitNotFound, "not a turn 9"},
		{[]string{"diff", "nope#1"}, ExitNotFound, "no plan \"nope\""},
		{[]string{"diff", claudeSession + "/toolu_nope^"}, ExitNotFound, "has no decision"},
	} {
		o := inWorkspace(dir, append([]string{"--yes"}, tc.args...)...)
		if o.code != tc.code || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%v: %v", tc.args, o)
		}
	}
}

func TestSessionsTextEdges(t *testing.T) {
	dir := newWorkspace(t)
	quietHook(t, dir, "claude-PreToolUse-Bash", "claude", "PreToolUse") // no prompt: a turn opens anyway
	for i := range 5 {
		writeFile(t, dir, "gen/"+string(rune('a'+i)), "x")
	}
	quietHook(t, dir, "claude-PostToolUse-Bash", "claude", "PostToolUse")
	// A decision plan runs, added to the session's plan: it belongs to no turn.
	mustPlan(t, dir, "exec", "--plan", claudeSession, "--id", "fixup", "--", "true")
	text := mustPlan(t, dir, "sessions").stdout
	for _, want := range []string{"(no prompt recorded)", "gen/a, gen/b, gen/c and 2 more", "outside any turn", "no file changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("sessions lacks %q:\n%s", want, text)
		}
	}
	// Without --yes and without a terminal, a rewind asks and is refused.
	if o := inWorkspace(dir, "rewind", "--session", claudeSession, "--turn", "1"); o.code != ExitUsage || !strings.Contains(o.stderr, "--yes") {
		t.Errorf("unconfirmed rewind: %v", o)
	}
}

// checkAgentOutputs validates sessions and rewind (schema_test.go).
func checkAgentOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := claudeTurn(t)
	mustPlan(t, dir, "exec", "--plan", claudeSession, "--id", "fixup", "--", "true") // a turn 0
	check("sessions", mustPlan(t, dir, "--json", "sessions").stdout)
	check("rewind", mustPlan(t, dir, "--json", "rewind", "--session", claudeSession, "--turn", "1", "--dry-run").stdout)
	check("rewind", mustPlan(t, dir, "--json", "--yes", "rewind", "--session", claudeSession, "--tool-call", "toolu_01HxW7kqT3oAbvR4yNcD8sLm").stdout)
}

// The retention policy runs at the end of each turn, as after each `plan run`.
func TestRetentionRunsAtTheEndOfATurn(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, ".plan/config.yaml", readFile(t, dir, ".plan/config.yaml")+"retention:\n  keep: 2\n")
	for i := range 3 {
		mustPlan(t, dir, "checkpoint", "create", "--note", strings.Repeat("n", i+1))
	}
	quietHook(t, dir, "claude-UserPromptSubmit", "claude", "UserPromptSubmit")
	quietHook(t, dir, "claude-Stop", "claude", "Stop")
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &list); err != nil || len(list) > 2 {
		t.Fatalf("%d checkpoints after the turn: %v", len(list), err)
	}
	// A policy that cannot be read is a warning; the agent goes on.
	writeFile(t, dir, ".plan/config.yaml", readFile(t, dir, ".plan/config.yaml")+"  older_than: soon\n")
	quietHook(t, dir, "claude-UserPromptSubmit", "claude", "UserPromptSubmit")
	if o := hookIn(dir, fixture(t, dir, "claude-Stop"), "claude", "Stop"); o.code != 0 || !strings.Contains(o.stdout, "retention policy") {
		t.Errorf("a broken policy: %v", o)
	}
}
