package features

import (
	"fmt"
	"os"
	"strings"

	"github.com/cucumber/godog"
)

// registerAgentInstallSteps adds the steps of agents_install.feature: a home directory of the
// scenario's own (so --user never reads or writes the real one) and substring checks on a file.
func (s *scenario) registerAgentInstallSteps(sc *godog.ScenarioContext) {
	sc.Step(`^my home directory is "([^"]*)"$`, s.myHomeIs)
	sc.Step(`^the file "([^"]*)" (includes|does not include) "(.*)"$`, s.theFileIncludes)
	sc.Step(`^the file "([^"]*)" includes "(.*)" (\d+) times?$`, s.theFileIncludesTimes)
}

func (s *scenario) myHomeIs(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p, 0o750); err != nil {
		return err
	}
	if s.env == nil {
		s.env = map[string]string{}
	}
	s.env["HOME"] = p
	return nil
}

func (s *scenario) readRel(rel string) (string, error) {
	p, err := s.path(rel)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	return string(b), err
}

func (s *scenario) theFileIncludes(rel, how, text string) error {
	b, err := s.readRel(rel)
	if err != nil {
		return err
	}
	if has := strings.Contains(b, unescape(text)); has != (how == "includes") {
		return fmt.Errorf("%s %s %q:\n%s", rel, map[bool]string{true: "includes", false: "does not include"}[has], text, b)
	}
	return nil
}

func (s *scenario) theFileIncludesTimes(rel, text string, n int) error {
	b, err := s.readRel(rel)
	if err != nil {
		return err
	}
	if got := strings.Count(b, unescape(text)); got != n {
		return fmt.Errorf("%s includes %q %d times, want %d:\n%s", rel, text, got, n, b)
	}
	return nil
}
