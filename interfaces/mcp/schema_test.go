package mcp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every tool's structured output, and a tool error's document, validates against its schema under
// docs/schema (checkMCPOutputs), and the schemas only MCP produces (mcp-*.json) are each checked by
// one: interfaces/cli's TestJSONOutputsMatchTheirSchemas does the same for every other schema.
func TestMCPOutputsMatchTheirSchemas(t *testing.T) {
	c := jsonschema.NewCompiler()
	schemas := map[string]*jsonschema.Schema{}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "schema", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	for _, f := range files {
		sch, err := c.Compile(f)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		schemas[strings.TrimSuffix(filepath.Base(f), ".json")] = sch
	}
	validated := map[string]bool{}
	check := func(name, doc string) {
		t.Helper()
		sch, ok := schemas[name]
		if !ok {
			t.Fatalf("no schema %s.json", name)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", name, err, doc)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s does not match docs/schema/%s.json: %v\n%s", name, name, err, doc)
		}
		validated[name] = true
	}
	checkMCPOutputs(t, check)
	for name := range schemas {
		if strings.HasPrefix(name, "mcp-") && !validated[name] {
			t.Errorf("docs/schema/%s.json is checked by no output", name)
		}
	}
}
