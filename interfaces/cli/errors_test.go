package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/interfaces/view"
)

// Every name application.Outcome can give an error has exactly one exit code, the contract's
// (docs/exit-codes.md, docs/schema/error.json), and outcomeCodes has no other: a kind or outcome
// added without a code would otherwise exit 0, outcomeCodes' zero.
func TestEveryOutcomeHasOneExitCode(t *testing.T) {
	// The contract. Never renumber.
	contract := map[string]int{
		"ok": 0, "interrupted": 130, "integrity": 6, "invalid": 3, "not_found": 4, "conflict": 5,
		"denied": 7, "unavailable": 1, "validation_failed": 1, "decision_failed": 1, "internal": 1,
	}
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "schema", "error.json"))
	if err != nil {
		t.Fatal(err)
	}
	outcomes := application.Outcomes()
	produced := map[string]bool{}
	for _, name := range outcomes {
		produced[name] = true
		code, ok := outcomeCodes[name]
		switch want, known := contract[name]; {
		case !ok:
			t.Errorf("outcome %q has no exit code", name)
		case !known || code != want:
			t.Errorf("outcome %q exits %d, the contract says %d (known: %v)", name, code, want, known)
		case name != application.OutcomeOK:
			// What --json prints for it is documented.
			var v view.Error
			v.Error.Kind, v.Error.Message, v.Code = name, "m", code
			b, _ := json.Marshal(v)
			doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
			if err := sch.Validate(doc); err != nil {
				t.Errorf("%s does not match docs/schema/error.json: %v", b, err)
			}
		}
	}
	for name := range outcomeCodes {
		if !produced[name] {
			t.Errorf("outcomeCodes has %q, which application.Outcome never returns", name)
		}
	}
	if len(produced) != len(contract) {
		t.Errorf("application.Outcomes() = %v, the contract names %d", outcomes, len(contract))
	}

	// Each fault kind has one name, its own, and exits with that name's code.
	seen := map[string]error{}
	for _, k := range fault.Kinds() {
		name := fault.Name(k)
		if other, dup := seen[name]; name == "" || dup {
			t.Errorf("kind %v is named %q (as %v is)", k, name, other)
		}
		seen[name] = k
		code, kind := exitCode(fmt.Errorf("context: %w", fault.Wrap(k, nil, "refused")))
		if kind != name || code != contract[name] || !produced[name] {
			t.Errorf("an error of kind %v exits %d %q, want %d %q (an outcome: %v)", k, code, kind, contract[name], name, produced[name])
		}
	}
}
