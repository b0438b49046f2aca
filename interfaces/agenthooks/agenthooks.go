package agenthooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Agents lists the agents plan speaks to.
var Agents = []string{"claude", "codex", "gemini"}

// Action is what plan does for a hook event.
type Action int

// The actions.
const (
	// Ignore: a read-only tool, or an event plan has no use for. Nothing is recorded.
	Ignore Action = iota
	// BeforeTool: checkpoint before a mutating tool call and record it as running.
	BeforeTool
	// AfterTool: record how the call ended and what it changed.
	AfterTool
	// Prompt: a user prompt opens a turn.
	Prompt
	// EndTurn: the agent stopped (or the session ended): close the turn.
	EndTurn
)

// Event is one hook invocation, parsed.
type Event struct {
	Agent  string
	Name   string // the agent's event name (PreToolUse, BeforeTool…)
	Action Action
	// Session is the agent's session ID; Cwd the directory the agent works in ("" when not said).
	Session string
	Cwd     string
	// CallID is the tool call's ID (Claude Code's tool_use_id, Codex's call ID). Derived says the
	// agent gives none (Gemini CLI): CallID is then a digest of the tool and its input, the same
	// before and after the call, which the caller numbers apart when a call repeats.
	CallID  string
	Derived bool
	Tool    string
	Summary string
	// Failed says the call ended in failure (AfterTool).
	Failed bool
	Prompt string
}

type eventSpec struct {
	action Action
	tool   bool // the payload names a tool
}

var events = map[string]map[string]eventSpec{
	"claude": {
		"PreToolUse": {BeforeTool, true}, "PostToolUse": {AfterTool, true}, "PostToolUseFailure": {AfterTool, true},
		"UserPromptSubmit": {Prompt, false}, "Stop": {EndTurn, false}, "SessionEnd": {EndTurn, false},
		"SessionStart": {Ignore, false}, "Notification": {Ignore, false}, "PreCompact": {Ignore, false},
		"SubagentStart": {Ignore, false}, "SubagentStop": {Ignore, false}, "PermissionRequest": {Ignore, false},
	},
	"codex": {
		"PreToolUse": {BeforeTool, true}, "PostToolUse": {AfterTool, true},
		"UserPromptSubmit": {Prompt, false}, "Stop": {EndTurn, false}, "StopFailure": {EndTurn, false},
		"SessionStart": {Ignore, false}, "PermissionRequest": {Ignore, false}, "PreCompact": {Ignore, false},
		"PostCompact": {Ignore, false}, "SubagentStart": {Ignore, false}, "SubagentStop": {Ignore, false},
	},
	"gemini": {
		"BeforeTool": {BeforeTool, true}, "AfterTool": {AfterTool, true},
		"BeforeAgent": {Prompt, false}, "AfterAgent": {EndTurn, false}, "SessionEnd": {EndTurn, false},
		"SessionStart": {Ignore, false}, "BeforeModel": {Ignore, false}, "AfterModel": {Ignore, false},
		"BeforeToolSelection": {Ignore, false}, "PreCompress": {Ignore, false}, "Notification": {Ignore, false},
	},
}

// mutating lists, per agent, the tools that change files, and the input field that best says
// what a call does.
var mutating = map[string]map[string]string{
	"claude": {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path", "Bash": "command"},
	"codex":  {"Bash": "command", "apply_patch": "command", "shell": "command", "exec_command": "cmd", "local_shell": "command"},
	"gemini": {"write_file": "file_path", "replace": "file_path", "run_shell_command": "command"},
}

// Events lists agent's event names, sorted (nil for an unknown agent).
func Events(agent string) []string {
	var out []string
	for name := range events[agent] {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// CheckInvocation refuses an unknown agent or event before anything is read.
func CheckInvocation(agent, event string) error {
	evs, ok := events[agent]
	if !ok {
		return fmt.Errorf("unknown agent %q: plan hook speaks %s", agent, strings.Join(Agents, ", "))
	}
	if _, ok := evs[event]; !ok {
		return fmt.Errorf("unknown %s hook event %q: want one of %s", agent, event, strings.Join(Events(agent), ", "))
	}
	return nil
}

// payload is the union of the fields plan reads from the three agents' payloads.
type payload struct {
	SessionID     *string         `json:"session_id"`
	HookEventName *string         `json:"hook_event_name"`
	Cwd           string          `json:"cwd"`
	ToolName      *string         `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     *string         `json:"tool_use_id"`
	ToolResponse  json.RawMessage `json:"tool_response"`
	Error         json.RawMessage `json:"error"`
	Prompt        *string         `json:"prompt"`
}

// MaxPayload bounds what plan reads of a payload (an Edit of a large file carries its text).
const MaxPayload = 64 << 20

// Parse reads one hook invocation of agent for event with the payload the agent wrote on stdin.
func Parse(agent, event string, data []byte) (Event, error) {
	if err := CheckInvocation(agent, event); err != nil {
		return Event{}, err
	}
	spec := events[agent][event]
	ev := Event{Agent: agent, Name: event, Action: spec.action}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return Event{}, fmt.Errorf("%s %s hook: the payload on stdin is not a JSON object", agent, event)
	}
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return Event{}, fmt.Errorf("%s %s hook: malformed JSON payload: %w", agent, event, err)
	}
	if p.HookEventName != nil && *p.HookEventName != event {
		return Event{}, fmt.Errorf("%s hook: the payload is a %s event, but the hook was invoked for %s", agent, *p.HookEventName, event)
	}
	if p.SessionID == nil || strings.TrimSpace(*p.SessionID) == "" {
		return Event{}, fmt.Errorf("%s %s hook: the payload has no session_id", agent, event)
	}
	ev.Session, ev.Cwd = *p.SessionID, p.Cwd
	if p.Prompt != nil {
		ev.Prompt = *p.Prompt
	}
	if !spec.tool {
		return ev, nil
	}
	if p.ToolName == nil || strings.TrimSpace(*p.ToolName) == "" {
		return Event{}, fmt.Errorf("%s %s hook: the payload has no tool_name", agent, event)
	}
	ev.Tool = *p.ToolName
	field, isMutating := mutating[agent][ev.Tool]
	if !isMutating {
		ev.Action = Ignore
		return ev, nil
	}
	var input map[string]any
	if len(p.ToolInput) > 0 && string(p.ToolInput) != "null" {
		if err := json.Unmarshal(p.ToolInput, &input); err != nil {
			return Event{}, fmt.Errorf("%s %s hook: tool_input of %s is not a JSON object", agent, event, ev.Tool)
		}
	}
	ev.Summary = summary(ev.Tool, input, field)
	switch {
	case agent == "gemini":
		ev.CallID, ev.Derived = derivedID(ev.Tool, p.ToolInput), true
	case p.ToolUseID == nil || strings.TrimSpace(*p.ToolUseID) == "":
		return Event{}, fmt.Errorf("%s %s hook: the payload has no tool_use_id for %s", agent, event, ev.Tool)
	default:
		ev.CallID = *p.ToolUseID
	}
	if spec.action == AfterTool {
		ev.Failed = event == "PostToolUseFailure" || failed(p.ToolResponse) || (len(p.Error) > 0 && string(p.Error) != "null" && string(p.Error) != `""`)
	}
	return ev, nil
}

// summary is the call in one line: the tool and what best says what it does.
func summary(tool string, input map[string]any, field string) string {
	v, _ := input[field].(string)
	if v == "" {
		if cmd, ok := input[field].([]any); ok { // an argv
			parts := make([]string, 0, len(cmd))
			for _, c := range cmd {
				parts = append(parts, fmt.Sprint(c))
			}
			v = strings.Join(parts, " ")
		}
	}
	v = strings.Join(strings.Fields(v), " ")
	if v == "" {
		return tool
	}
	return tool + ": " + v
}

// failed reads a tool response's own word for failure: an error, a non-zero exit code, success
// false, or interrupted.
func failed(resp json.RawMessage) bool {
	var m map[string]any
	if len(resp) == 0 || json.Unmarshal(resp, &m) != nil {
		return false
	}
	if e, ok := m["error"]; ok && e != nil && e != "" {
		return true
	}
	for _, k := range []string{"exit_code", "exitCode"} {
		if n, ok := m[k].(float64); ok && n != 0 {
			return true
		}
	}
	if s, ok := m["success"].(bool); ok && !s {
		return true
	}
	if i, ok := m["interrupted"].(bool); ok && i {
		return true
	}
	return false
}

// derivedID names a call the agent gives no ID: a digest of its tool and input (canonical JSON),
// the same in the payloads before and after it.
func derivedID(tool string, input json.RawMessage) string {
	var v any
	canon := []byte("null")
	if json.Unmarshal(input, &v) == nil {
		canon, _ = json.Marshal(v) // maps marshal with sorted keys
	}
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canon)
	return "g" + hex.EncodeToString(h.Sum(nil))[:23]
}

// Reply is the answer to a hook: what to write on stdout and stderr, and the exit code.
type Reply struct {
	Stdout string
	Stderr string
	Code   int
}

// CanBlock says whether the event can stop the tool call (a tool's pre event).
func CanBlock(agent, event string) bool {
	return events[agent][event].action == BeforeTool && events[agent][event].tool
}

// Allow lets the agent go on, saying nothing.
func Allow() Reply { return Reply{} }

// Warn lets the agent go on and tells the user msg: on stderr, and in the systemMessage the
// three protocols show the user.
func Warn(msg string) Reply {
	b, _ := json.Marshal(map[string]string{"systemMessage": "plan: " + msg})
	return Reply{Stdout: string(b) + "\n", Stderr: "plan: warning: " + msg + "\n"}
}

// Block stops the tool call of a pre event with reason (exit 2, the reason on stderr, which all
// three agents show the model); for an event that cannot block it is Warn.
func Block(agent, event, reason string) Reply {
	if !CanBlock(agent, event) {
		return Warn(reason)
	}
	return Reply{Stderr: "plan: " + reason + "\n", Code: 2}
}

// Misuse answers an invocation plan cannot act on (an unknown agent or event, a malformed
// payload): the protocols' non-blocking error, exit 1 with the message on stderr.
func Misuse(msg string) Reply { return Reply{Stderr: "plan: " + msg + "\n", Code: 1} }
