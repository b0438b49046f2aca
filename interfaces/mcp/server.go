// Package mcp is `plan mcp`: plan's undo tools for an AI agent (checkpoint, list, diff, restore,
// revert, undo, status, sessions, rewind) as a Model Context Protocol server on stdio; docs/mcp.md
// is its reference.
//
// The seam: this package depends on interfaces/cli, never the other way round. It runs the CLI's
// commands through cli.Runner and returns the documents of interfaces/view, which both packages
// share, so its output schemas are inferred from the very types --json prints. The `plan mcp`
// command itself stays in the CLI (its flags, help and workspace discovery are the CLI's, and
// urfave/cli lives there only); once it has found the workspace it calls the Runner's MCP hook,
// which cmd/plan sets to Serve. A hook, not an import, because the CLI importing this package
// would be a cycle.
//
// Invariants:
//   - a tool MUST run the command of the same name through a cli.Runner in-process (never a
//     parallel code path, never the binary), so that services, locks, names, recovery, the
//     operation log and the JSON are the command line's; destructive tools pass --yes (the client
//     asks the user, as the tools' destructiveHint tells it);
//   - a failure MUST be a tool error carrying the error document of --json (kind and exit code),
//     never structured content;
//   - Serve MUST NOT return while a tool call's command is still running.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/interfaces/cli"
	"github.com/planhq/plan/interfaces/view"
)

// Serve is `plan mcp` once the CLI has found the workspace, root: it speaks MCP on r's stdin and
// stdout until stdin closes or ctx ends, each tool call a command run in-process on root through a
// Runner like r. It returns once the calls under way have ended. It is cli.Runner's MCP hook.
func Serve(ctx context.Context, r *cli.Runner, root string) error {
	srv, tools := newMCPServer(r, root)
	in, out, release := holdEOF(ctx, r.Stdin, r.Stdout)
	err := srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	release()
	// A client that leaves mid-call (stdin closed) must not leave a command cut short by the
	// process's exit: the calls still running end first (finished, or interrupted and undone
	// through their journal when the session cancels them).
	tools.drain()
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nopWriteCloser leaves the Runner's stdout open when the MCP connection closes: it is not ours.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpTools runs the tools of one server: each call is a plan command run in-process on root.
type mcpTools struct {
	r    *cli.Runner
	root string
	// mu guards running, the commands under way, which the server waits for before it exits
	// (idle is signalled when the last ends), and closing, set then: a call after it is refused.
	mu      sync.Mutex
	idle    *sync.Cond
	running int
	closing bool
}

func newMCPTools(r *cli.Runner, root string) *mcpTools {
	t := &mcpTools{r: r, root: root}
	t.idle = sync.NewCond(&t.mu)
	return t
}

// begin counts a command in; false once the server is closing.
func (t *mcpTools) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.running++
	return true
}

func (t *mcpTools) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running--; t.running == 0 {
		t.idle.Broadcast()
	}
}

// drain refuses new calls and waits for those under way to end.
func (t *mcpTools) drain() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closing = true
	for t.running > 0 {
		t.idle.Wait()
	}
}

// mcpInstructions is what the server tells the client about itself when it connects.
const mcpInstructions = "plan keeps checkpoints of this workspace (every file, shell side effects included; .git untouched). " +
	"With plan's agent hooks installed, every mutating tool call of the agent is checkpointed: sessions lists them, rewind goes back to before one. " +
	"Take a checkpoint before a risky change (checkpoint), see what changed since one (diff FROM with no TO compares with the workspace), " +
	"and get back: restore puts the workspace or some paths back as a checkpoint holds them, revert undoes one decision and keeps later work, " +
	"undo reverses the latest restore or revert. Checkpoints are named by ID, unique prefix, short name, @ (the latest), @~N. " +
	"Destructive tools take a safety checkpoint first and accept dry_run to preview."

func newMCPServer(r *cli.Runner, root string) (*sdk.Server, *mcpTools) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "plan", Title: "plan: safe, fast undo", Version: r.Version},
		&sdk.ServerOptions{Instructions: mcpInstructions})
	t := newMCPTools(r, root)
	addMCPTool(srv, &sdk.Tool{
		Name: "checkpoint", Title: "Take a checkpoint",
		Description: "Record the whole workspace as a checkpoint (plan checkpoint create). Additive: nothing in the workspace changes.",
		Annotations: annotations(false, false, false),
	}, nil, t.checkpoint)
	addMCPTool(srv, &sdk.Tool{
		Name: "list", Title: "List checkpoints",
		Description: "List the workspace's checkpoints, newest first (plan checkpoint list).",
		Annotations: annotations(true, false, true),
	}, nil, t.list)
	addMCPTool(srv, &sdk.Tool{
		Name: "diff", Title: "Compare checkpoints",
		Description: "Compare two checkpoints, or a checkpoint with the live workspace when `to` is empty (plan diff).",
		Annotations: annotations(true, false, true),
	}, nil, t.diff)
	addMCPTool(srv, &sdk.Tool{
		Name: "restore", Title: "Restore a checkpoint",
		Description: "Put the workspace, or only the given paths, back as a checkpoint holds them, atomically, through the journaled " +
			"rollback (plan rollback). A pre_rollback safety checkpoint is taken first; undo reverses it. dry_run lists what would change.",
		Annotations: annotations(false, true, false),
	}, func(s *jsonschema.Schema) { enum(s, "mode", "both", "files", "state") }, t.restore)
	addMCPTool(srv, &sdk.Tool{
		Name: "revert", Title: "Revert one decision",
		Description: "Undo one decision's changes and keep what later decisions and the user did since (plan revert). " +
			"Overlapping changes are conflicts: by default nothing changes then (kind conflict). undo reverses a revert.",
		Annotations: annotations(false, true, false),
	}, func(s *jsonschema.Schema) { enum(s, "conflicts", "refuse", "markers") }, t.revert)
	addMCPTool(srv, &sdk.Tool{
		Name: "undo", Title: "Undo the latest restore or revert",
		Description: "Undo the most recent rollback, correction or decision not undone yet, back to the safety checkpoint taken " +
			"just before it (plan undo). Call again to undo the one before.",
		Annotations: annotations(false, true, false),
	}, nil, t.undo)
	addMCPTool(srv, &sdk.Tool{
		Name: "sessions", Title: "Agent sessions",
		Description: "The recorded agent sessions (Claude Code, Codex, Gemini CLI through plan's hooks) with their turns and tool calls: " +
			"time, tool, a summary of the call, the files it changed, and the checkpoint taken before it (plan sessions).",
		Annotations: annotations(true, false, true),
	}, nil, t.sessions)
	addMCPTool(srv, &sdk.Tool{
		Name: "rewind", Title: "Rewind an agent session",
		Description: "Restore the workspace to before a turn or a tool call of an agent session, through the journaled rollback " +
			"(plan rewind): a pre_rollback safety checkpoint first; undo reverses it. dry_run lists what would change.",
		Annotations: annotations(false, true, false),
	}, func(s *jsonschema.Schema) { enum(s, "mode", "both", "files", "state") }, t.rewind)
	addMCPTool(srv, &sdk.Tool{
		Name: "status", Title: "Workspace status",
		Description: "The latest checkpoint, what changed since it, an interrupted operation if any, and the current plan's decisions (plan status).",
		Annotations: annotations(true, false, true),
	}, nil, t.status)
	return srv, t
}

func annotations(readOnly, destructive, idempotent bool) *sdk.ToolAnnotations {
	closed := false
	return &sdk.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &closed}
}

// enum limits the string property name of s to values.
func enum(s *jsonschema.Schema, name string, values ...string) {
	p := s.Properties[name]
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
	p.Default = json.RawMessage(strconv.Quote(values[0]))
}

// mcpFailure is a tool call plan refused or failed: the kind and exit code of docs/exit-codes.md.
type mcpFailure struct{ view view.Error }

func (f *mcpFailure) Error() string { return f.view.Error.Kind + ": " + f.view.Error.Message }

func usageFailure(format string, args ...any) *mcpFailure {
	var v view.Error
	v.Error.Kind, v.Error.Message, v.Code = application.OutcomeUsage, fmt.Sprintf(format, args...), cli.ExitUsage
	return &mcpFailure{view: v}
}

// addMCPTool registers a tool whose input is In (its schema inferred from In's json and jsonschema
// tags, then adjusted by refine) and whose structured output is Out. The input is validated here,
// not by the SDK, so that a call the schema refuses is a tool error with plan's kind (usage) like
// every other failure; run's notes (warnings plan printed) follow the output as text.
func addMCPTool[In, Out any](srv *sdk.Server, tool *sdk.Tool, refine func(*jsonschema.Schema), run func(context.Context, In) (Out, []string, error)) {
	in := mustSchema[In]()
	if refine != nil {
		refine(in)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: input schema: %v", tool.Name, err))
	}
	tool.InputSchema, tool.OutputSchema = in, mustSchema[Out]()
	srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		input, err := decodeInput[In](resolved, req.Params.Arguments)
		if err != nil {
			return failureResult(err), nil
		}
		out, notes, err := run(ctx, input)
		if err != nil {
			return failureResult(err), nil
		}
		b, _ := json.Marshal(out) // views of strings, numbers, slices and maps of them always encode
		res := &sdk.CallToolResult{StructuredContent: json.RawMessage(b), Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
		for _, n := range notes {
			res.Content = append(res.Content, &sdk.TextContent{Text: n})
		}
		return res, nil
	})
}

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	return s
}

// decodeInput validates raw against the tool's schema and decodes it. Defaults the schema shows
// (a restore's mode, a revert's conflicts) are the command's own: an absent value is left empty.
func decodeInput[In any](resolved *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var in In
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return in, usageFailure("the arguments are not a JSON object: %v", err)
	}
	if err := resolved.Validate(doc); err != nil {
		return in, usageFailure("invalid arguments: %v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, usageFailure("invalid arguments: %v", err)
	}
	return in, nil
}

// failureResult is the tool error for err: its message with plan's kind and exit code as text, then
// plan's error document ({"error": {"kind", "message"}, "code"}, as `plan --json` prints it) as a
// second text. Not as structured content: clients check that against the tool's output schema,
// errors included.
func failureResult(err error) *sdk.CallToolResult {
	var f *mcpFailure
	if !errors.As(err, &f) {
		var v view.Error
		v.Code, v.Error.Kind = cli.ExitCode(err)
		v.Error.Message = err.Error()
		f = &mcpFailure{view: v}
	}
	b, _ := json.Marshal(f.view)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
		&sdk.TextContent{Text: fmt.Sprintf("plan: %s (kind %s, exit code %d)", f.view.Error.Message, f.view.Error.Kind, f.view.Code)},
		&sdk.TextContent{Text: string(b)},
	}}
}

// call runs `plan --json ARGS…` in-process on the workspace and decodes its output into out. It
// returns what plan printed on stderr besides the error (warnings, recovery reports); a failure is
// an *mcpFailure with plan's kind and exit code.
func (t *mcpTools) call(ctx context.Context, out any, args ...string) ([]string, error) {
	if !t.begin() {
		var v view.Error
		v.Error.Kind, v.Error.Message, v.Code = application.OutcomeInterrupted, "plan mcp is shutting down: its client left", cli.ExitInterrupted
		return nil, &mcpFailure{view: v}
	}
	defer t.end()
	var stdout, stderr bytes.Buffer
	r := &cli.Runner{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Version: t.r.Version, Dir: t.root, Getenv: t.r.Getenv}
	code := r.Run(ctx, append([]string{"plan", "--json"}, args...))
	var notes []string
	var failure *view.Error
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var v view.Error
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &v) == nil && v.Error.Kind != "" {
			failure = &v
			continue
		}
		if line != "" {
			notes = append(notes, line)
		}
	}
	if code != cli.ExitOK {
		if failure == nil {
			v := view.Error{Code: code}
			v.Error.Kind, v.Error.Message = application.OutcomeInternal, fmt.Sprintf("plan %s exited %d: %s", args[0], code, strings.Join(notes, "; "))
			failure = &v
		}
		return nil, &mcpFailure{view: *failure}
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return nil, fmt.Errorf("plan %s printed no JSON document: %w", args[0], err)
	}
	return notes, nil
}

// flag is `--name=value`, a form that keeps a value starting with "-" a value.
func flag(name, value string) string { return "--" + name + "=" + value }

// labelFlags are --label flags for labels, in key order; the keys are checked first, so that a key
// holding "=" cannot pass for another label.
func labelFlags(labels map[string]string) ([]string, error) {
	if err := checkpoint.ValidateLabels(labels); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, flag("label", k+"="+labels[k]))
	}
	return out, nil
}

type mcpCheckpointIn struct {
	Note   string            `json:"note,omitempty" jsonschema:"a note to keep with the checkpoint (what is about to happen)"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"labels to tag the checkpoint with: lower-case keys, printable values"`
}

func (t *mcpTools) checkpoint(ctx context.Context, in mcpCheckpointIn) (view.Checkpoint, []string, error) {
	var v view.Checkpoint
	labels, err := labelFlags(in.Labels)
	if err != nil {
		return v, nil, err
	}
	args := append([]string{"checkpoint", "create", flag("note", in.Note)}, labels...)
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpListIn struct {
	Limit  int               `json:"limit,omitempty" jsonschema:"list the newest N checkpoints only (0: all)"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only checkpoints carrying all these labels"`
}

type mcpListOut struct {
	Checkpoints []view.Checkpoint `json:"checkpoints" jsonschema:"the checkpoints, newest first"`
}

func (t *mcpTools) list(ctx context.Context, in mcpListIn) (mcpListOut, []string, error) {
	out := mcpListOut{Checkpoints: []view.Checkpoint{}}
	labels, err := labelFlags(in.Labels)
	if err != nil {
		return out, nil, err
	}
	args := append([]string{"checkpoint", "list", flag("limit", strconv.Itoa(in.Limit))}, labels...)
	notes, err := t.call(ctx, &out.Checkpoints, args...)
	return out, notes, err
}

type mcpDiffIn struct {
	From     string `json:"from" jsonschema:"the checkpoint to compare from: ID, unique prefix, short name, @ (the latest), @~N, DECISION^ or DECISION"`
	To       string `json:"to,omitempty" jsonschema:"the checkpoint to compare to; empty: the live workspace"`
	NameOnly bool   `json:"name_only,omitempty" jsonschema:"the text content lists only the changed paths, one a line"`
	Stat     bool   `json:"stat,omitempty" jsonschema:"count the lines inserted and deleted in each text file, and in all"`
	Patch    bool   `json:"patch,omitempty" jsonschema:"add a unified diff for each text file"`
}

func (t *mcpTools) diff(ctx context.Context, in mcpDiffIn) (view.Diff, []string, error) {
	var v view.Diff
	if in.From == "" {
		return v, nil, usageFailure("missing from: the checkpoint to compare from")
	}
	for _, ref := range []string{in.From, in.To} {
		if strings.HasPrefix(ref, "-") { // no name starts so; on plan's command line it would be a flag
			var e view.Error
			e.Error.Kind, e.Error.Message, e.Code = "invalid", fmt.Sprintf("malformed checkpoint name %q", ref), cli.ExitInvalid
			return v, nil, &mcpFailure{view: e}
		}
	}
	args := []string{"diff"}
	if in.NameOnly {
		args = append(args, "--name-only")
	}
	if in.Stat {
		args = append(args, "--stat")
	}
	if in.Patch {
		args = append(args, "--patch")
	}
	// The trailing "--" says both are checkpoints: plan diff takes what follows it as paths.
	args = append(args, in.From)
	if in.To != "" {
		args = append(args, in.To)
	}
	args = append(args, "--")
	notes, err := t.call(ctx, &v, args...)
	if err == nil && in.NameOnly {
		paths := make([]string, 0, len(v.Changes))
		for _, c := range v.Changes {
			paths = append(paths, c.Path)
		}
		notes = append([]string{strings.Join(paths, "\n")}, notes...)
	}
	return v, notes, err
}

type mcpRestoreIn struct {
	Checkpoint string   `json:"checkpoint,omitempty" jsonschema:"the checkpoint to restore: ID, unique prefix, short name, @, @~N, DECISION^ or DECISION (or give at)"`
	At         string   `json:"at,omitempty" jsonschema:"instead of checkpoint: the newest checkpoint created at or before this time (RFC 3339, or a duration ago such as 2h or 3d)"`
	Paths      []string `json:"paths,omitempty" jsonschema:"restore only these files and directories (recursively, relative to the workspace root); everything else stays as it is"`
	Mode       string   `json:"mode,omitempty" jsonschema:"both: workspace and decision states; files: the workspace only; state: decision states only"`
	DryRun     bool     `json:"dry_run,omitempty" jsonschema:"list what would change; change nothing"`
}

func (t *mcpTools) restore(ctx context.Context, in mcpRestoreIn) (view.Rollback, []string, error) {
	var v view.Rollback
	switch {
	case in.Checkpoint != "" && in.At != "":
		return v, nil, usageFailure("give checkpoint or at, not both")
	case in.Checkpoint == "" && in.At == "":
		return v, nil, usageFailure("give the checkpoint to restore (checkpoint) or a time (at)")
	}
	args := []string{"--yes", "rollback"}
	if in.Mode != "" {
		args = append(args, flag("mode", in.Mode))
	}
	if in.Checkpoint != "" {
		args = append(args, flag("to-checkpoint", in.Checkpoint))
	} else {
		args = append(args, flag("at", in.At))
	}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	args = append(append(args, "--"), in.Paths...)
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpRevertIn struct {
	Decision  string `json:"decision" jsonschema:"the decision to revert: its ID or a unique prefix (an agent's tool call ID for a recorded one)"`
	Reason    string `json:"reason" jsonschema:"why it was wrong (kept with the correction)"`
	Plan      string `json:"plan,omitempty" jsonschema:"the plan the decision belongs to (default: the current plan)"`
	Conflicts string `json:"conflicts,omitempty" jsonschema:"refuse: change nothing on a conflict; markers: write diff3 markers and keep the pre-state beside as PATH.reverted"`
	DryRun    bool   `json:"dry_run,omitempty" jsonschema:"show the per-path plan (restore, merge, conflict); change nothing"`
}

func (t *mcpTools) revert(ctx context.Context, in mcpRevertIn) (view.Revert, []string, error) {
	var v view.Revert
	if in.Decision == "" {
		return v, nil, usageFailure("give the decision to revert")
	}
	args := []string{"--yes", "revert", flag("decision", in.Decision), flag("reason", in.Reason)}
	if in.Conflicts != "" {
		args = append(args, flag("conflicts", in.Conflicts))
	}
	if in.Plan != "" {
		args = append(args, flag("plan", in.Plan))
	}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpUndoIn struct {
	DryRun bool `json:"dry_run,omitempty" jsonschema:"say what would be undone; change nothing"`
}

func (t *mcpTools) undo(ctx context.Context, in mcpUndoIn) (view.Undo, []string, error) {
	var v view.Undo
	args := []string{"--yes", "undo"}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpStatusIn struct {
	Plan string `json:"plan,omitempty" jsonschema:"the plan to show (default: the current plan)"`
}

func (t *mcpTools) status(ctx context.Context, in mcpStatusIn) (view.WorkspaceStatus, []string, error) {
	var v view.WorkspaceStatus
	args := []string{"status"}
	if in.Plan != "" {
		args = append(args, flag("plan", in.Plan))
	}
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpSessionsIn struct {
	Session string `json:"session,omitempty" jsonschema:"only this session: its plan name (claude-SESSION_ID) or its ID"`
}

func (t *mcpTools) sessions(ctx context.Context, in mcpSessionsIn) (view.Sessions, []string, error) {
	var v view.Sessions
	args := []string{"sessions"}
	if in.Session != "" {
		args = append(args, "--", in.Session)
	}
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}

type mcpRewindIn struct {
	Session  string   `json:"session" jsonschema:"the session: its plan name (claude-SESSION_ID) or its ID (sessions lists them)"`
	Turn     *int     `json:"turn,omitempty" jsonschema:"rewind to before turn N (1 or more); or give tool_call"`
	ToolCall string   `json:"tool_call,omitempty" jsonschema:"rewind to before the tool call with this ID (the agent's); or give turn"`
	Mode     string   `json:"mode,omitempty" jsonschema:"both: files and decision states; files: the files only; state: mark the decisions since as reverted only"`
	Paths    []string `json:"paths,omitempty" jsonschema:"rewind only these files and directories (relative to the workspace root)"`
	DryRun   bool     `json:"dry_run,omitempty" jsonschema:"list what would change; change nothing"`
}

func (t *mcpTools) rewind(ctx context.Context, in mcpRewindIn) (view.Rewind, []string, error) {
	var v view.Rewind
	if in.Session == "" {
		return v, nil, usageFailure("give the session to rewind (sessions lists them)")
	}
	args := []string{"--yes", "rewind", flag("session", in.Session)}
	if in.Turn != nil {
		args = append(args, flag("turn", strconv.Itoa(*in.Turn)))
	}
	if in.ToolCall != "" {
		args = append(args, flag("tool-call", in.ToolCall))
	}
	if in.Mode != "" {
		args = append(args, "--"+in.Mode)
	}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	args = append(append(args, "--"), in.Paths...)
	notes, err := t.call(ctx, &v, args...)
	return v, notes, err
}
