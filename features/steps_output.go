package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
)

func (s *scenario) registerOutputSteps(sc *godog.ScenarioContext) {
	// Exit codes: the only steps allowed right after a command that failed.
	sc.Step(`^it succeeds$`, s.itSucceeds)
	sc.Step(`^the exit code is (\d+)$`, s.theExitCodeIs)
	sc.Step(`^the exit code is not 0$`, s.theExitCodeIsNotZero)
	sc.Step(`^the process was killed$`, s.theProcessWasKilled)

	// Text.
	sc.Step(`^(stdout|stderr) contains "(.*)"$`, s.streamContains)
	sc.Step(`^(stdout|stderr) does not contain "(.*)"$`, s.streamDoesNotContain)
	sc.Step(`^(stdout|stderr) is empty$`, s.streamIsEmpty)
	sc.Step(`^stdout is:$`, s.stdoutIs)

	// JSON: "output" is stdout, "error" the error document on stderr.
	sc.Step(`^the JSON (output|error) has "([^"]*)" equal to "(.*)"$`, s.jsonHasEqual)
	sc.Step(`^the JSON (output|error) has "([^"]*)" matching "(.*)"$`, s.jsonHasMatching)
	sc.Step(`^the JSON (output|error) has "([^"]*)" greater than (\d+)$`, s.jsonHasGreaterThan)
	sc.Step(`^the JSON (output|error) has "([^"]*)" containing "(.*)"$`, s.jsonHasContaining)
	sc.Step(`^the JSON output has (\d+) "([^"]*)"$`, s.jsonHasCount)
	sc.Step(`^the JSON output lists (\d+) items?$`, s.jsonListsItems)
	sc.Step(`^the JSON output has "([^"]*)" with exactly:$`, s.jsonArrayExactly)
	sc.Step(`^the JSON output has "([^"]*)" including:$`, s.jsonArrayIncluding)
	sc.Step(`^the JSON output has no "([^"]*)" item whose "([^"]*)" starts with "([^"]*)"$`, s.jsonNoItemStartingWith)
}

func (s *scenario) ran() error {
	if s.cmdline == "" {
		return errors.New("no command has run yet")
	}
	return nil
}

func (s *scenario) itSucceeds() error {
	if err := s.ran(); err != nil {
		return err
	}
	if s.exitCode != 0 {
		return fmt.Errorf("`%s` exited %d, want 0\nstdout:\n%s\nstderr:\n%s", s.cmdline, s.exitCode, s.stdout, s.stderr)
	}
	return nil
}

func (s *scenario) theExitCodeIs(code int) error {
	if err := s.ran(); err != nil {
		return err
	}
	if s.exitCode != code {
		return fmt.Errorf("`%s` exited %d, want %d\nstdout:\n%s\nstderr:\n%s", s.cmdline, s.exitCode, code, s.stdout, s.stderr)
	}
	s.unchecked = false
	return nil
}

func (s *scenario) theExitCodeIsNotZero() error {
	if err := s.ran(); err != nil {
		return err
	}
	if s.exitCode == 0 {
		return fmt.Errorf("`%s` succeeded, want a failure\nstdout:\n%s\nstderr:\n%s", s.cmdline, s.stdout, s.stderr)
	}
	s.unchecked = false
	return nil
}

// theProcessWasKilled checks the process died of SIGKILL (128+9), as an armed failpoint makes it.
func (s *scenario) theProcessWasKilled() error {
	return s.theExitCodeIs(128 + 9)
}

func (s *scenario) stream(which string) string {
	if which == "stderr" {
		return s.stderr
	}
	return s.stdout
}

func (s *scenario) streamContains(which, text string) error {
	if err := s.ran(); err != nil {
		return err
	}
	want, err := s.expand(unescape(text))
	if err != nil {
		return err
	}
	if !strings.Contains(s.stream(which), want) {
		return fmt.Errorf("%s of `%s` does not contain %q:\n%s", which, s.cmdline, want, s.stream(which))
	}
	return nil
}

func (s *scenario) streamDoesNotContain(which, text string) error {
	if err := s.ran(); err != nil {
		return err
	}
	unwanted, err := s.expand(unescape(text))
	if err != nil {
		return err
	}
	if strings.Contains(s.stream(which), unwanted) {
		return fmt.Errorf("%s of `%s` contains %q:\n%s", which, s.cmdline, unwanted, s.stream(which))
	}
	return nil
}

func (s *scenario) streamIsEmpty(which string) error {
	if err := s.ran(); err != nil {
		return err
	}
	if got := s.stream(which); got != "" {
		return fmt.Errorf("%s of `%s` is not empty:\n%s", which, s.cmdline, got)
	}
	return nil
}

// stdoutIs compares stdout with the doc string, line for line, ignoring trailing blank lines.
func (s *scenario) stdoutIs(doc *godog.DocString) error {
	if err := s.ran(); err != nil {
		return err
	}
	want, err := s.expand(doc.Content)
	if err != nil {
		return err
	}
	got := strings.TrimRight(s.stdout, "\n")
	want = strings.TrimRight(want, "\n")
	if got != want {
		return fmt.Errorf("stdout of `%s` is\n%s\nwant\n%s", s.cmdline, got, want)
	}
	return nil
}

// lookup follows a dot path ("error.kind", "changes.0.path") into a decoded JSON document; the
// empty path is the document itself.
func lookup(doc any, path string) (any, error) {
	if path == "" {
		return doc, nil
	}
	cur := doc
	for _, key := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[key]
			if !ok {
				return nil, fmt.Errorf("%q: no field %q", path, key)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("%q: %q is not an index of an array of %d", path, key, len(v))
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%q: cannot look up %q in %v", path, key, cur)
		}
	}
	return cur, nil
}

// matchValue compares a JSON value with its written form: numbers as numbers, true/false, null,
// strings as they are, objects and arrays as compact JSON.
func matchValue(actual any, want string) error {
	switch v := actual.(type) {
	case nil:
		if want == "null" {
			return nil
		}
	case bool:
		if strconv.FormatBool(v) == want {
			return nil
		}
	case json.Number:
		a, ok1 := new(big.Rat).SetString(v.String())
		w, ok2 := new(big.Rat).SetString(want)
		if ok1 && ok2 && a.Cmp(w) == 0 {
			return nil
		}
	case string:
		if v == want {
			return nil
		}
	default:
		b, err := json.Marshal(v)
		if err == nil && string(b) == want {
			return nil
		}
	}
	return fmt.Errorf("is %s, want %s", show(actual), want)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func (s *scenario) jsonField(which, path string) (any, any, error) {
	if err := s.ran(); err != nil {
		return nil, nil, err
	}
	doc, err := s.jsonDoc(which)
	if err != nil {
		return nil, nil, err
	}
	// A path may name a remembered ID, as in "reasons.<one>".
	if path, err = s.expand(path); err != nil {
		return nil, nil, err
	}
	v, err := lookup(doc, path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w in\n%s", err, show(doc))
	}
	return doc, v, nil
}

func (s *scenario) jsonHasEqual(which, path, want string) error {
	doc, v, err := s.jsonField(which, path)
	if err != nil {
		return err
	}
	if want, err = s.expand(want); err != nil {
		return err
	}
	if err := matchValue(v, want); err != nil {
		return fmt.Errorf("%q %w in\n%s", path, err, show(doc))
	}
	return nil
}

func (s *scenario) jsonHasMatching(which, path, pattern string) error {
	_, v, err := s.jsonField(which, path)
	if err != nil {
		return err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return err
	}
	str, ok := v.(string)
	if !ok {
		str = show(v)
	}
	if !re.MatchString(str) {
		return fmt.Errorf("%q is %s, which does not match %s", path, show(v), pattern)
	}
	return nil
}

func (s *scenario) jsonHasContaining(which, path, text string) error {
	_, v, err := s.jsonField(which, path)
	if err != nil {
		return err
	}
	want, err := s.expand(unescape(text))
	if err != nil {
		return err
	}
	str, ok := v.(string)
	if !ok || !strings.Contains(str, want) {
		return fmt.Errorf("%q is %s, which does not contain %q", path, show(v), want)
	}
	return nil
}

func (s *scenario) jsonHasGreaterThan(which, path string, n int) error {
	_, v, err := s.jsonField(which, path)
	if err != nil {
		return err
	}
	num, ok := v.(json.Number)
	if !ok {
		return fmt.Errorf("%q is %s, not a number", path, show(v))
	}
	f, err := num.Float64()
	if err != nil {
		return err
	}
	if f <= float64(n) {
		return fmt.Errorf("%q is %s, want more than %d", path, num, n)
	}
	return nil
}

func (s *scenario) jsonArray(path string) ([]any, error) {
	_, v, err := s.jsonField("output", path)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%q is %s, not an array", path, show(v))
	}
	return arr, nil
}

func (s *scenario) jsonHasCount(n int, path string) error {
	arr, err := s.jsonArray(path)
	if err != nil {
		return err
	}
	if len(arr) != n {
		return fmt.Errorf("%q has %d items, want %d:\n%s", path, len(arr), n, show(arr))
	}
	return nil
}

func (s *scenario) jsonListsItems(n int) error { return s.jsonHasCount(n, "") }

// Table cells with a special meaning: absent says a field must not be there at all (an omitted
// optional field); set says it must be there and be neither null nor empty.
const (
	absent = "(absent)"
	set    = "(set)"
)

// rowMatches reports whether item has every column of the table row (dot paths within the item).
func (s *scenario) rowMatches(item any, header []string, row []string) (bool, error) {
	for i, col := range header {
		v, err := lookup(item, col)
		if row[i] == absent {
			if err == nil {
				return false, nil
			}
			continue
		}
		if err != nil {
			return false, nil //nolint:nilerr // a missing field is a mismatch, not an error
		}
		if row[i] == set {
			if v == nil || v == "" {
				return false, nil
			}
			continue
		}
		want, err := s.expand(row[i])
		if err != nil {
			return false, err
		}
		if matchValue(v, want) != nil {
			return false, nil //nolint:nilerr // a value that differs is a mismatch, not an error
		}
	}
	return true, nil
}

// matchRows pairs every table row with a distinct array item and returns the rows left unmatched.
func (s *scenario) matchRows(arr []any, table *godog.Table) ([]string, int, error) {
	if len(table.Rows) == 0 {
		return nil, 0, errors.New("the table needs a header row")
	}
	rows := tableRows(table)
	header := rows[0]
	used := make([]bool, len(arr))
	var missing []string
	for _, row := range rows[1:] {
		found := false
		for i, item := range arr {
			if used[i] {
				continue
			}
			ok, err := s.rowMatches(item, header, row)
			if err != nil {
				return nil, 0, err
			}
			if ok {
				used[i], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, strings.Join(row, " | "))
		}
	}
	return missing, len(table.Rows) - 1, nil
}

func tableRows(t *godog.Table) [][]string {
	out := make([][]string, 0, len(t.Rows))
	for _, r := range t.Rows {
		row := make([]string, 0, len(r.Cells))
		for _, c := range r.Cells {
			row = append(row, c.Value)
		}
		out = append(out, row)
	}
	return out
}

// jsonArrayExactly checks that the array holds exactly the table's rows, in any order.
func (s *scenario) jsonArrayExactly(path string, table *godog.Table) error {
	arr, err := s.jsonArray(path)
	if err != nil {
		return err
	}
	missing, rows, err := s.matchRows(arr, table)
	if err != nil {
		return err
	}
	if len(missing) > 0 || rows != len(arr) {
		return fmt.Errorf("%q does not hold exactly the %d rows (unmatched: %v):\n%s", path, rows, missing, indent(arr))
	}
	return nil
}

// jsonArrayIncluding checks that every row of the table matches an item of the array.
func (s *scenario) jsonArrayIncluding(path string, table *godog.Table) error {
	arr, err := s.jsonArray(path)
	if err != nil {
		return err
	}
	missing, _, err := s.matchRows(arr, table)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%q has no item for %v:\n%s", path, missing, indent(arr))
	}
	return nil
}

func (s *scenario) jsonNoItemStartingWith(path, field, prefix string) error {
	arr, err := s.jsonArray(path)
	if err != nil {
		return err
	}
	if prefix, err = s.expand(prefix); err != nil {
		return err
	}
	for _, item := range arr {
		v, err := lookup(item, field)
		if err != nil {
			continue
		}
		if str, ok := v.(string); ok && strings.HasPrefix(str, prefix) {
			return fmt.Errorf("%q has an item whose %q starts with %q: %s", path, field, prefix, show(item))
		}
	}
	return nil
}

func indent(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
