package planfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/infrastructure/internal/planfile"
)

func TestParseValid(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want planfile.File
	}{
		{
			name: "minimal",
			src:  "name: site\ndecisions:\n  - id: a\n    run: ./a.sh\n",
			want: planfile.File{Path: "plan.yaml", Name: "site", Decisions: []plan.Definition{{ID: "a", Run: "./a.sh"}}},
		},
		{
			name: "full",
			src: `# a comment
name: site
decisions:
  - id: scaffold
    name: Scaffold sources
    run: ./scaffold.sh
    timeout: 5m
    env: {MODE: fast, LEVEL: 3, EMPTY: ""}
  - id: build_2-x
    run: |
      make all
      make test
    timeout: 1h30m
    env:
      A: "1"
`,
			want: planfile.File{Path: "plan.yaml", Name: "site", Decisions: []plan.Definition{
				{
					ID: "scaffold", Name: "Scaffold sources", Run: "./scaffold.sh", Timeout: 5 * time.Minute,
					Env: map[string]string{"MODE": "fast", "LEVEL": "3", "EMPTY": ""},
				},
				{ID: "build_2-x", Run: "make all\nmake test\n", Timeout: 90 * time.Minute, Env: map[string]string{"A": "1"}},
			}},
		},
		{
			name: "keys in any order, numeric name",
			src:  "decisions:\n  - run: true\n    id: \"0\"\nname: 2024\n",
			want: planfile.File{Path: "plan.yaml", Name: "2024", Decisions: []plan.Definition{{ID: "0", Run: "true"}}},
		},
		{
			name: "empty env",
			src:  "name: n\ndecisions:\n  - {id: a, run: x, env: {}}\n",
			want: planfile.File{Path: "plan.yaml", Name: "n", Decisions: []plan.Definition{{ID: "a", Run: "x", Env: map[string]string{}}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := planfile.Parse("plan.yaml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		name string
		src  string
		// want are substrings of the message; the first is the location prefix.
		want []string
	}{
		{"not YAML", "name: [unclosed\n", []string{"p.yaml: not valid YAML"}},
		{"labels a list", "name: n\ndecisions:\n  - id: a\n    run: x\n    labels: [a]\n", []string{"p.yaml:5: decision 1: labels must be a mapping"}},
		{"label a mapping", "name: n\ndecisions:\n  - id: a\n    run: x\n    labels:\n      k: {v: 1}\n", []string{"p.yaml:6: decision 1: label k must be a scalar"}},
		{"label key", "name: n\ndecisions:\n  - id: a\n    run: x\n    labels: {Phase: x}\n", []string{"p.yaml:5: decision 1: label key \"Phase\""}},
		{"label twice", "name: n\ndecisions:\n  - id: a\n    run: x\n    labels:\n      k: 1\n      k: 2\n", []string{"p.yaml:7: decision 1: label \"k\" appears twice"}},
		{"not YAML tab", "name: a\n\tdecisions: []\n", []string{"p.yaml: not valid YAML"}},
		{"empty file", "", []string{"p.yaml: the file is empty"}},
		{"only comments", "# nothing\n", []string{"p.yaml: the file is empty"}},
		{"top-level list", "- a\n- b\n", []string{"p.yaml:1: the top level must be a mapping"}},
		{"top-level scalar", "\n\nhello\n", []string{"p.yaml:3: the top level must be a mapping"}},
		{"missing name", "decisions:\n  - {id: a, run: x}\n", []string{"p.yaml:1: missing required key \"name\""}},
		{"empty name", "name: \"\"\ndecisions:\n  - {id: a, run: x}\n", []string{"p.yaml:1: missing required key \"name\""}},
		{"name a list", "\nname: [a, b]\ndecisions:\n  - {id: a, run: x}\n", []string{"p.yaml:2: name must be a string"}},
		{"name a mapping", "name:\n  x: 1\ndecisions:\n  - {id: a, run: x}\n", []string{"p.yaml:2: name must be a string"}},
		{"name null", "name: ~\ndecisions:\n  - {id: a, run: x}\n", []string{"p.yaml:1: name must be a string"}},
		{"missing decisions", "name: site\n", []string{"p.yaml:1: missing required key \"decisions\""}},
		{"decisions a mapping", "name: site\ndecisions:\n  a: b\n", []string{"p.yaml:3: \"decisions\" must be a list"}},
		{"decisions a scalar", "name: site\ndecisions: many\n", []string{"p.yaml:2: \"decisions\" must be a list"}},
		{"decisions empty", "name: site\ndecisions: []\n", []string{"p.yaml:2: \"decisions\" must be a list with at least one decision"}},
		{"decisions null", "name: site\ndecisions:\n", []string{"p.yaml:2: \"decisions\" must be a list"}},
		{"decision a scalar", "name: s\ndecisions:\n  - {id: a, run: x}\n  - just text\n", []string{"p.yaml:4: decision 2 must be a mapping"}},
		{"decision a list", "name: s\ndecisions:\n  - [a, b]\n", []string{"p.yaml:3: decision 1 must be a mapping"}},
		{
			"unknown top-level key", "name: s\nversion: 2\ndecisions:\n  - {id: a, run: x}\n",
			[]string{"p.yaml:2: plan: unknown key \"version\"", "known keys: name, decisions"},
		},
		{
			"unknown decision key", "name: s\ndecisions:\n  - id: a\n    run: x\n    timout: 5m\n",
			[]string{"p.yaml:5: decision 1: unknown key \"timout\"", "known keys: id, name, run, timeout, env"},
		},
		{"duplicate top-level key", "name: s\nname: t\ndecisions:\n  - {id: a, run: x}\n", []string{"p.yaml:2: plan: key \"name\" appears twice"}},
		{
			"duplicate decision key", "name: s\ndecisions:\n  - id: a\n    run: x\n    run: y\n",
			[]string{"p.yaml:5: decision 1: key \"run\" appears twice"},
		},
		{"missing id", "name: s\ndecisions:\n  - name: A\n    run: x\n", []string{"p.yaml:3: decision 1: missing required key \"id\""}},
		{"illegal id", "name: s\ndecisions:\n  - run: x\n    id: Build\n", []string{"p.yaml:4: decision 1: ID \"Build\" must match"}},
		{"id with slash", "name: s\ndecisions:\n  - {id: a/b, run: x}\n", []string{"p.yaml:3: decision 1: ID \"a/b\" must match"}},
		{"id a list", "name: s\ndecisions:\n  - id: [a]\n    run: x\n", []string{"p.yaml:3: decision 1: id must be a string"}},
		{
			"duplicate id", "name: s\ndecisions:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: a, run: y}\n",
			[]string{"p.yaml:5: decision 3: ID \"a\" is already used by decision 1"},
		},
		{"missing run", "name: s\ndecisions:\n  - id: a\n    name: A\n", []string{"p.yaml:3: decision 1 (a): missing required key \"run\""}},
		{"empty run", "name: s\ndecisions:\n  - id: a\n    run: \"  \"\n", []string{"p.yaml:4: decision 1 (a): missing required key \"run\""}},
		{"null run", "name: s\ndecisions:\n  - id: a\n    run:\n", []string{"p.yaml:4: decision 1: run must be a string"}},
		{"run a list", "name: s\ndecisions:\n  - id: a\n    run: [make]\n", []string{"p.yaml:4: decision 1: run must be a string"}},
		{
			"bad timeout", "name: s\ndecisions:\n  - id: a\n    run: x\n    timeout: soon\n",
			[]string{"p.yaml:5: decision 1: timeout \"soon\" is not a positive duration"},
		},
		{
			"zero timeout", "name: s\ndecisions:\n  - id: a\n    run: x\n    timeout: 0s\n",
			[]string{"p.yaml:5: decision 1: timeout \"0s\" is not a positive duration"},
		},
		{
			"negative timeout", "name: s\ndecisions:\n  - id: a\n    run: x\n    timeout: -5m\n",
			[]string{"p.yaml:5: decision 1: timeout \"-5m\" is not a positive duration"},
		},
		{
			"bare number timeout", "name: s\ndecisions:\n  - id: a\n    run: x\n    timeout: 30\n",
			[]string{"p.yaml:5: decision 1: timeout \"30\" is not a positive duration"},
		},
		{
			"timeout a mapping", "name: s\ndecisions:\n  - id: a\n    run: x\n    timeout: {m: 5}\n",
			[]string{"p.yaml:5: decision 1: timeout must be a string"},
		},
		{"env a list", "name: s\ndecisions:\n  - id: a\n    run: x\n    env: [A=1]\n", []string{"p.yaml:5: decision 1: env must be a mapping"}},
		{"env a scalar", "name: s\ndecisions:\n  - id: a\n    run: x\n    env: A=1\n", []string{"p.yaml:5: decision 1: env must be a mapping"}},
		{
			"env value a list", "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      A: 1\n      B: [1, 2]\n",
			[]string{"p.yaml:7: decision 1: env B must be a scalar value"},
		},
		{
			"env value a mapping", "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      B:\n        c: d\n",
			[]string{"p.yaml:7: decision 1: env B must be a scalar value"},
		},
		{
			"env name with =", "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      OK: 1\n      \"A=B\": 2\n",
			[]string{"p.yaml:7: decision 1: env name \"A=B\" is not valid"},
		},
		{
			"env empty name", "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      \"\": 2\n",
			[]string{"p.yaml:6: decision 1: env name \"\" is not valid"},
		},
		{
			"env duplicate name", "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      A: 1\n      A: 2\n",
			[]string{"p.yaml:7: decision 1: env name \"A\" appears twice"},
		},
		{
			"second decision's error", "name: s\ndecisions:\n  - {id: a, run: x}\n  - id: b\n    run: y\n    timeout: 0\n",
			[]string{"p.yaml:6: decision 2: timeout \"0\""},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := planfile.Parse("p.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if !errors.Is(err, fault.ErrInvalid) || fault.Kind(err) != fault.ErrInvalid {
				t.Fatalf("error %q is not invalid input", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.want[0]) {
				t.Fatalf("message %q does not start with %q", msg, c.want[0])
			}
			for _, w := range c.want[1:] {
				if !strings.Contains(msg, w) {
					t.Fatalf("message %q does not contain %q", msg, w)
				}
			}
			if f.Name != "" || f.Decisions != nil {
				t.Fatalf("a refused file returned content: %+v", f)
			}
		})
	}
}

func write(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, "plan.yaml", []byte("name: site\ndecisions:\n  - {id: a, run: ./a.sh, timeout: 2s}\n"))
	f, err := planfile.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := planfile.File{Path: p, Name: "site", Decisions: []plan.Definition{{ID: "a", Run: "./a.sh", Timeout: 2 * time.Second}}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v, want %+v", f, want)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	p := write(t, "bad.yaml", []byte("name: s\ndecisions:\n  - {id: A, run: x}\n"))
	_, err := planfile.Load(p)
	if fault.Kind(err) != fault.ErrInvalid || !strings.HasPrefix(err.Error(), p+":3: ") {
		t.Fatalf("got %v, want invalid input at %s:3", err, p)
	}
}

func TestLoadMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := planfile.Load(p)
	if !errors.Is(err, fault.ErrNotFound) || fault.Kind(err) != fault.ErrNotFound {
		t.Fatalf("got %v, want not found", err)
	}
	if !strings.Contains(err.Error(), p) {
		t.Fatalf("message should name the file: %v", err)
	}
}

// A directory named as the plan file is bad input (exit 3), not an internal error.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := planfile.Load(dir)
	if fault.Kind(err) != fault.ErrInvalid || !strings.Contains(err.Error(), dir+" is a directory") {
		t.Fatalf("got %v (kind %v), want invalid input naming the directory", err, fault.Kind(err))
	}
}

// A file that opens but cannot be read reports the cause and names the file.
func TestLoadUnreadable(t *testing.T) {
	const mem = "/proc/self/mem" // opens, reads fail with EIO at offset 0
	if _, err := os.Stat(mem); err != nil {
		t.Skip("no /proc/self/mem here")
	}
	_, err := planfile.Load(mem)
	if err == nil || fault.Kind(err) == fault.ErrInvalid || !strings.Contains(err.Error(), "read plan file "+mem) {
		t.Fatalf("got %v (kind %v), want the read error naming the file", err, fault.Kind(err))
	}
}

// No text of a plan file may hold a NUL character: no command line, environment variable or
// database text can carry one, so the file is refused whole, before anything runs.
func TestParseRefusesNUL(t *testing.T) {
	for name, src := range map[string]string{
		"env value": "name: n\ndecisions:\n  - {id: a, run: x, env: {A: \"x\\0y\"}}\n",
		"run":       "name: n\ndecisions:\n  - id: a\n    run: \"echo \\0\"\n",
		"name":      "name: \"a\\0\"\ndecisions:\n  - {id: a, run: x}\n",
		"label key": "name: n\ndecisions:\n  - {id: a, run: x, labels: {\"k\\0\": v}}\n",
		"validate":  "name: n\ndecisions:\n  - {id: a, run: x, validate: \"t\\0\"}\n",
	} {
		f, err := planfile.Parse("p.yaml", []byte(src))
		if fault.Kind(err) != fault.ErrInvalid || !strings.Contains(err.Error(), "NUL character") || f.Decisions != nil {
			t.Errorf("%s: got %+v, %v; want invalid input naming the NUL", name, f, err)
		}
	}
	if _, err := planfile.Parse("p.yaml", []byte("name: n\ndecisions:\n  - {id: a, run: \"x\\ty\"}\n")); err != nil {
		t.Errorf("a tab is not a NUL: %v", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	// A valid plan followed by a long comment: only the size is wrong.
	head := "name: site\ndecisions:\n  - {id: a, run: x}\n#"
	b := []byte(head + strings.Repeat("x", planfile.MaxSize-len(head)))
	if len(b) != planfile.MaxSize {
		t.Fatal("setup")
	}
	if _, err := planfile.Load(write(t, "max.yaml", b)); err != nil {
		t.Fatalf("a file of exactly MaxSize bytes: %v", err)
	}
	b = append(b, 'x')
	_, err := planfile.Load(write(t, "big.yaml", b))
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v, want invalid input (too large)", err)
	}
}

// The package invariant: a file is accepted whole or refused. A second YAML document is content
// the user wrote; dropping it silently runs a different plan than the file describes.
func TestParseRefusesSecondDocument(t *testing.T) {
	for _, src := range []string{
		"name: s\ndecisions:\n  - {id: a, run: x}\n---\nname: t\ndecisions:\n  - {id: b, run: y}\n",
		"name: s\ndecisions:\n  - {id: a, run: x}\n---\n- garbage: [\n",
	} {
		f, err := planfile.Parse("p.yaml", []byte(src))
		if fault.Kind(err) != fault.ErrInvalid || !strings.HasPrefix(err.Error(), "p.yaml") {
			t.Errorf("%q: got %+v, %v; want invalid input", src, f, err)
		}
	}
}

// YAML aliases are ordinary YAML; a plan sharing an env block between decisions is natural.
func TestParseAliases(t *testing.T) {
	src := "name: s\ndecisions:\n  - id: a\n    run: &cmd make\n    env: &common {MODE: fast}\n  - id: b\n    run: *cmd\n    env: *common\n"
	f, err := planfile.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.Definition{
		{ID: "a", Run: "make", Env: map[string]string{"MODE": "fast"}},
		{ID: "b", Run: "make", Env: map[string]string{"MODE": "fast"}},
	}
	if !reflect.DeepEqual(f.Decisions, want) {
		t.Fatalf("got %+v, want %+v", f.Decisions, want)
	}
}
