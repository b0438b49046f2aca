package features

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/cucumber/godog"
)

// Steps that speak JSON-RPC to `plan mcp` (the real binary) over its stdin and stdout, as an agent's
// MCP client does: initialize, initialized, then one request. A tool call's outcome lands where a
// command's does, so the output steps check it: on success the structured output is stdout (JSON)
// and the exit code 0; a tool error puts plan's error document on stderr and its code as the exit
// code; a JSON-RPC error is stderr with exit code 2; a server that ended without answering leaves
// its own stderr and exit code.

func (s *scenario) registerMCPSteps(sc *godog.ScenarioContext) {
	sc.Step(`^I call the MCP tool "([^"]*)" with:$`, func(tool string, args *godog.DocString) error {
		return s.callMCPTool(tool, args.Content)
	})
	sc.Step(`^I call the MCP tool "([^"]*)"$`, func(tool string) error { return s.callMCPTool(tool, "{}") })
	sc.Step(`^I list the MCP tools$`, s.iListTheMCPTools)
	sc.Step(`^the MCP tools are exactly "([^"]*)"$`, s.theMCPToolsAreExactly)
	sc.Step(`^the MCP tool "([^"]*)" is (read-only|additive|destructive)$`, s.theMCPToolIs)
}

type mcpResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// mcpRequest starts `plan mcp` in the workspace, initialises a session, sends method with params
// and returns the response; exited says the server ended before answering (its exit code and
// stderr are then the scenario's).
func (s *scenario) mcpRequest(method string, params any) (resp mcpResponse, exited bool, err error) {
	if s.unchecked {
		return resp, false, s.uncheckedError()
	}
	bin, err := s.h.processBinary()
	if err != nil {
		return resp, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp")
	cmd.Dir, cmd.Env = s.ws, s.processEnv(os.Environ())
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return resp, false, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return resp, false, err
	}
	if err := cmd.Start(); err != nil {
		return resp, false, err
	}
	s.cmdline = "plan mcp: " + method
	for _, m := range []any{
		map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "plan-features", "version": "1"}}},
		map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"},
		map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": params},
	} {
		b, _ := json.Marshal(m)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			break // the server ended: its exit code says why
		}
	}
	found := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r mcpResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return resp, false, fmt.Errorf("plan mcp wrote a line that is not JSON-RPC: %q", sc.Text())
		}
		if string(r.ID) == "2" {
			resp, found = r, true
			break
		}
	}
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case found && werr != nil:
		return resp, false, fmt.Errorf("plan mcp answered, then ended with %w: %s", werr, errOut.String())
	case found:
		s.stderr = errOut.String()
		return resp, false, nil
	case errors.As(werr, &ee):
		s.stdout, s.stderr, s.exitCode, s.unchecked = "", errOut.String(), ee.ExitCode(), true
		return resp, true, nil
	}
	return resp, false, fmt.Errorf("plan mcp ended (%w) without answering %s: %s", werr, method, errOut.String())
}

func (s *scenario) callMCPTool(tool, args string) error {
	expanded, err := s.expand(args)
	if err != nil {
		return err
	}
	var arguments any
	if err := json.Unmarshal([]byte(expanded), &arguments); err != nil {
		return fmt.Errorf("the arguments are not JSON: %w", err)
	}
	resp, exited, err := s.mcpRequest("tools/call", map[string]any{"name": tool, "arguments": arguments})
	if err != nil || exited {
		return err
	}
	s.cmdline = "plan mcp: tools/call " + tool + " " + expanded
	if len(resp.Error) > 0 {
		s.stdout, s.stderr, s.exitCode, s.unchecked = "", string(resp.Error), 2, true
		return nil
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return fmt.Errorf("tools/call result: %w in %s", err, resp.Result)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	if !res.IsError {
		if len(res.StructuredContent) == 0 || len(texts) == 0 || !json.Valid([]byte(texts[0])) {
			return fmt.Errorf("a successful call without its JSON output: %s", resp.Result)
		}
		s.stdout, s.stderr, s.exitCode, s.unchecked = string(res.StructuredContent), strings.Join(texts[1:], "\n"), 0, false
		return nil
	}
	var doc struct {
		Code int `json:"code"`
	}
	if len(texts) != 2 || len(res.StructuredContent) > 0 || json.Unmarshal([]byte(texts[1]), &doc) != nil || doc.Code == 0 {
		return fmt.Errorf("a tool error is two texts, the second plan's error document, and no structured content: %s", resp.Result)
	}
	s.stdout, s.stderr, s.exitCode, s.unchecked = "", texts[1], doc.Code, true
	return nil
}

func (s *scenario) iListTheMCPTools() error {
	resp, exited, err := s.mcpRequest("tools/list", map[string]any{})
	if err != nil || exited {
		return err
	}
	if len(resp.Error) > 0 {
		return fmt.Errorf("tools/list: %s", resp.Error)
	}
	s.stdout, s.exitCode, s.unchecked = string(resp.Result), 0, false
	return nil
}

type mcpToolInfo struct {
	Name        string `json:"name"`
	Annotations struct {
		ReadOnly    bool  `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		Idempotent  bool  `json:"idempotentHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	} `json:"annotations"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
}

func (s *scenario) listedMCPTools() (map[string]mcpToolInfo, error) {
	var list struct {
		Tools []mcpToolInfo `json:"tools"`
	}
	if err := json.Unmarshal([]byte(s.stdout), &list); err != nil {
		return nil, fmt.Errorf("no tool list (run `I list the MCP tools` first): %w", err)
	}
	out := map[string]mcpToolInfo{}
	for _, t := range list.Tools {
		out[t.Name] = t
	}
	return out, nil
}

func (s *scenario) theMCPToolsAreExactly(names string) error {
	tools, err := s.listedMCPTools()
	if err != nil {
		return err
	}
	got := make([]string, 0, len(tools))
	for n := range tools {
		got = append(got, n)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != names {
		return fmt.Errorf("the tools are %q, want %q", strings.Join(got, " "), names)
	}
	return nil
}

// theMCPToolIs checks a listed tool's hints: read-only (and idempotent), additive (changes, destroys
// nothing) or destructive; every tool is closed-world and has object schemas for input and output.
func (s *scenario) theMCPToolIs(name, kind string) error {
	tools, err := s.listedMCPTools()
	if err != nil {
		return err
	}
	t, ok := tools[name]
	if !ok {
		return fmt.Errorf("no tool %q", name)
	}
	a := t.Annotations
	if a.Destructive == nil || a.OpenWorld == nil || *a.OpenWorld {
		return fmt.Errorf("%s: hints %+v: destructiveHint and openWorldHint (false) must be given", name, a)
	}
	var ok2 bool
	switch kind {
	case "read-only":
		ok2 = a.ReadOnly && a.Idempotent && !*a.Destructive
	case "additive":
		ok2 = !a.ReadOnly && !*a.Destructive
	case "destructive":
		ok2 = !a.ReadOnly && *a.Destructive && !a.Idempotent
	}
	if !ok2 {
		return fmt.Errorf("%s is not %s: readOnly %v, destructive %v, idempotent %v", name, kind, a.ReadOnly, *a.Destructive, a.Idempotent)
	}
	if t.InputSchema["type"] != "object" || t.InputSchema["additionalProperties"] != false || t.OutputSchema["type"] != "object" {
		return fmt.Errorf("%s: input schema %v, output schema type %v", name, t.InputSchema, t.OutputSchema["type"])
	}
	return nil
}
