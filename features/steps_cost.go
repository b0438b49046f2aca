package features

import (
	"github.com/cucumber/godog"
)

// registerCostSteps registers the steps of cost.feature (the fixed cost of a command).
func (s *scenario) registerCostSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the environment sets ([A-Z_]+) to "([^"]*)"$`, s.theEnvironmentSets)
}

// theEnvironmentSets sets an environment variable for every plan command the scenario runs.
func (s *scenario) theEnvironmentSets(name, value string) error {
	if s.env == nil {
		s.env = map[string]string{}
	}
	s.env[name] = value
	return nil
}
