// Package schematest checks JSON documents against the schemas of docs/schema, for the tests of
// every interface that prints them (the CLI's --json, the MCP tools' results): one reading of the
// schemas, and a record of which ones some document was checked against.
package schematest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Checker validates documents against the schemas in one directory.
type Checker struct {
	t       testing.TB
	schemas map[string]*jsonschema.Schema
	// Validated names the schemas Check used.
	Validated map[string]bool
}

// New compiles every *.json schema in dir; the test fails when there is none or one does not compile.
func New(t testing.TB, dir string) *Checker {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
	}
	c := &Checker{t: t, schemas: map[string]*jsonschema.Schema{}, Validated: map[string]bool{}}
	compiler := jsonschema.NewCompiler()
	for _, f := range files {
		sch, err := compiler.Compile(f)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		c.schemas[strings.TrimSuffix(filepath.Base(f), ".json")] = sch
	}
	return c
}

// Names are the schemas' names (their file names without .json).
func (c *Checker) Names() []string {
	out := make([]string, 0, len(c.schemas))
	for name := range c.schemas {
		out = append(out, name)
	}
	return out
}

// Check validates doc against the schema name: a missing schema or a document that is not JSON
// fails the test at once, one that does not match is an error.
func (c *Checker) Check(name, doc string) {
	c.t.Helper()
	sch, ok := c.schemas[name]
	if !ok {
		c.t.Fatalf("no schema %s.json", name)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		c.t.Fatalf("%s: not JSON: %v\n%s", name, err, doc)
	}
	if err := sch.Validate(v); err != nil {
		c.t.Errorf("%s does not match docs/schema/%s.json: %v\n%s", name, name, err, doc)
	}
	c.Validated[name] = true
}
