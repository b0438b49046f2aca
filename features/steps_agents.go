package features

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
)

// registerAgentSteps adds the steps that play an AI coding agent calling `plan hook` with its
// payloads: the real-shaped fixtures of interfaces/agenthooks/testdata, or one written inline.
func (s *scenario) registerAgentSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the agent "([^"]*)" sends "([^"]*)" from "([^"]*)"$`, s.agentSendsFixture)
	sc.Step(`^the agent "([^"]*)" sends "([^"]*)" with:$`, s.agentSendsInline)
}

// agentSendsFixture runs `plan hook AGENT EVENT` with the fixture name as its stdin, $CWD in it
// set to the workspace.
func (s *scenario) agentSendsFixture(agent, event, name string) error {
	b, err := os.ReadFile(filepath.Join("..", "interfaces", "agenthooks", "testdata", name+".json"))
	if err != nil {
		return err
	}
	return s.hook(agent, event, strings.ReplaceAll(string(b), "$CWD", s.ws))
}

func (s *scenario) agentSendsInline(agent, event string, doc *godog.DocString) error {
	return s.hook(agent, event, strings.ReplaceAll(doc.Content, "$CWD", s.ws))
}

// hook runs one hook invocation as the agent does: stdin a pipe, not a terminal.
func (s *scenario) hook(agent, event, payload string) error {
	if s.unchecked {
		return s.uncheckedError()
	}
	if s.ws == "" {
		return errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	args := []string{"plan", "hook", agent, event}
	var out, errOut bytes.Buffer
	var code int
	var err error
	began := time.Now()
	if s.h.Binary != "" {
		bin, berr := s.h.processBinary()
		if berr != nil {
			return berr
		}
		code, err = s.runProcess(bin, args, payload, false, "", &out, &errOut)
	} else {
		code, err = s.runInProcess(args, payload, false, &out, &errOut)
	}
	if err != nil {
		return err
	}
	s.cmdline = strings.Join(args, " ")
	s.stdout, s.stderr, s.exitCode = out.String(), errOut.String(), code
	s.elapsed = time.Since(began)
	s.unchecked = code != 0
	return nil
}
