package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/planhq/plan/domain/fault"
)

// Every integer setting is refused unless written as a whole number, naming the key and the file:
// yaml alone takes keep: 2.9 for 2 without a word.
func TestLoadRefusesFractions(t *testing.T) {
	p := Path(t.TempDir())
	for body, key := range map[string]string{
		"retention:\n  keep: 2.9\n":                        "line 2: retention.keep: want a whole number, not 2.9",
		"retention:\n  keep: 1e3\n":                        "retention.keep: want a whole number, not 1e3",
		"retention:\n  keep: 3\n  archives: {keep: 0.5}\n": "line 3: retention.archives.keep: want a whole number, not 0.5",
		// An anchor where any text goes (a label), aliased or merged where an integer goes.
		"retention:\n  classes: [{type: pre_decision, keep: forever, labels: {a: &k 2.5}}]\n  keep: *k\n":    "retention.keep: want a whole number, not 2.5",
		"retention:\n  classes: [{type: pre_decision, keep: forever, labels: &m {keep: 7.5}}]\n  <<: *m\n":   "retention.keep: want a whole number, not 7.5",
		"retention:\n  classes: [{type: pre_decision, keep: forever, labels: &m {keep: 3.5}}]\n  <<: [*m]\n": "retention.keep: want a whole number, not 3.5",
		"retention:\n  classes: [{type: pre_decision}]\n  keep: 1.0\n":                                       "retention.keep: want a whole number, not 1.0",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Load(p)
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), key) {
			t.Errorf("Load(%q) = %+v, %v; want invalid input naming %q and the file", body, f, err, key)
		}
		if f.Retention != nil {
			t.Errorf("Load(%q) returned a policy with its refusal: %+v", body, f.Retention)
		}
	}
	// Whole numbers in any notation yaml calls an integer stand, and so do the settings that are
	// not integers (durations and sizes have their own parsers).
	body := "retention:\n  keep: 0x10\n  older_than: 1.5h\n  archives: {keep: 0}\n  classes:\n    - {type: pre_decision, keep: forever}\ncache: {max_bytes: 1.5}\ngc: {grace: 2.5}\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil || *f.Retention.Keep != 16 || *f.Retention.Archives.Keep != 0 || f.Cache.MaxBytes != "1.5" {
		t.Fatalf("Load of whole numbers: %+v, %v", f, err)
	}
}

func TestYAMLField(t *testing.T) {
	if sf, ok := yamlField(reflect.TypeFor[Retention](), "older_than"); !ok || sf.Name != "OlderThan" {
		t.Errorf("older_than: %v, %v", sf.Name, ok)
	}
	if _, ok := yamlField(reflect.TypeFor[Retention](), "nope"); ok {
		t.Error("a key no field has was found")
	}
}

// The walk follows the schema into lists: an integer list item is held to the same rule, and
// its message names the item.
func TestWholeNumbersInLists(t *testing.T) {
	type item struct {
		N uint8 `yaml:"n"`
	}
	type schema struct {
		Items []item `yaml:"items"`
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("items:\n  - {n: 1}\n  - {n: 2.5}\n"), &doc); err != nil {
		t.Fatal(err)
	}
	err := wholeNumbers(&doc, reflect.TypeFor[schema](), "")
	if err == nil || err.Error() != "line 3: items[1].n: want a whole number, not 2.5" {
		t.Fatalf("got %v", err)
	}
}
