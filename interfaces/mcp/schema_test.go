package mcp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/tests/testkit/schematest"
)

// Every tool's structured output, and a tool error's document, validates against its schema under
// docs/schema (checkMCPOutputs), and the schemas only MCP produces (mcp-*.json) are each checked by
// one: interfaces/cli's TestJSONOutputsMatchTheirSchemas does the same for every other schema.
func TestMCPOutputsMatchTheirSchemas(t *testing.T) {
	schemas := schematest.New(t, filepath.Join("..", "..", "docs", "schema"))
	check, validated := schemas.Check, schemas.Validated
	checkMCPOutputs(t, check)
	for _, name := range schemas.Names() {
		if strings.HasPrefix(name, "mcp-") && !validated[name] {
			t.Errorf("docs/schema/%s.json is checked by no output", name)
		}
	}
}
