package persistence

import (
	"maps"
	"regexp"
	"slices"
	"testing"
)

// applyDDLByRegexp is how the schemas were read before applyDDL: the reference it must agree with.
func applyDDLByRegexp(tables map[string][]string, stmt string) {
	var (
		ddlCreate = regexp.MustCompile(`^\s*CREATE TABLE (\w+) \(`)
		ddlColumn = regexp.MustCompile(`(?m)^\s*([a-z_]+) (?:TEXT|INTEGER)\b`)
		ddlAdd    = regexp.MustCompile(`^\s*ALTER TABLE (\w+) ADD COLUMN (\w+)`)
		ddlDrop   = regexp.MustCompile(`^\s*DROP TABLE (\w+)\s*$`)
		ddlRename = regexp.MustCompile(`^\s*ALTER TABLE (\w+) RENAME TO (\w+)\s*$`)
	)
	if c := ddlCreate.FindStringSubmatch(stmt); c != nil {
		var cols []string
		for _, col := range ddlColumn.FindAllStringSubmatch(stmt, -1) {
			cols = append(cols, col[1])
		}
		tables[c[1]] = cols
	} else if a := ddlAdd.FindStringSubmatch(stmt); a != nil {
		tables[a[1]] = append(slices.Clip(tables[a[1]]), a[2])
	} else if dr := ddlDrop.FindStringSubmatch(stmt); dr != nil {
		delete(tables, dr[1])
	} else if r := ddlRename.FindStringSubmatch(stmt); r != nil {
		tables[r[2]] = tables[r[1]]
		delete(tables, r[1])
	}
}

// Reading the migrations by string matching gives every version the tables and columns the
// regular expressions gave, for the real migrations and for statements at the edges of the forms.
func TestApplyDDLMatchesRegexps(t *testing.T) {
	var stmts []string
	for _, m := range migrations {
		stmts = append(stmts, m.sql...)
	}
	stmts = append(stmts,
		"CREATE TABLE one (a TEXT, b INTEGER)", // columns on the CREATE line are not read
		"  CREATE TABLE two (\n\tx_y TEXT NOT NULL,\n  z INTEGERS,\n  Upper TEXT,\n  w INTEGER\n  n TEXT_X\n  m TEXT\n)",
		"CREATE TABLE  bad (\n a TEXT\n)", // two spaces: not the form
		"CREATE TABLE three(\n a TEXT\n)", // no space before the parenthesis
		"CREATE TABLE four (\n ab\n cd\tTEXT\n e  INTEGER\n f INTEGER\n)",
		"ALTER TABLE two ADD COLUMN v TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE missing ADD COLUMN q INTEGER",
		"ALTER TABLE two ADD COLUMN ",
		"ALTER TABLE one RENAME TO uno  \n",
		"ALTER TABLE uno RENAME TO dos extra",
		"DROP TABLE two",
		"DROP TABLE one;",
		"DROP TABLE ",
		"CREATE INDEX i ON dos(a)",
		"UPDATE dos SET a = 1",
		"\n\tDROP TABLE three\t",
	)
	byString, byRegexp := map[string][]string{}, map[string][]string{}
	for i, stmt := range stmts {
		applyDDL(byString, stmt)
		applyDDLByRegexp(byRegexp, stmt)
		if !maps.EqualFunc(byString, byRegexp, slices.Equal) {
			t.Fatalf("after statement %d %q:\n  by string: %v\n  by regexp: %v", i, stmt, byString, byRegexp)
		}
	}
	if len(schemaAt(latestSchema())) == 0 || len(tablesAt(latestSchema())) == 0 {
		t.Fatal("the latest schema has no tables")
	}
}
