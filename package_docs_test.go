package plan_test

// The package-doc rule of the house style, enforced: a package's doc comment (the comment directly
// above a package clause, in any file) says what the package is for, its one or two invariants and
// where the rest is written, in at most maxPackageDocLines lines. Specifications, write orders and
// byte formats live in docs/design.md and docs/format.md.
//
// Comments are read with go/parser (package clause only), as architecture_test.go reads imports:
// no build, every build tag, every file the go tool would see.

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxPackageDocLines is the longest a package doc comment may be.
const maxPackageDocLines = 25

// packageDoc is one file's package doc comment, keyed for reporting.
type packageDoc struct {
	path  string // slash-separated, relative to the module root
	pkg   string
	lines int
}

func TestPackageDocs(t *testing.T) {
	docs, err := scanPackageDocs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range longPackageDocs(docs) {
		t.Error(v)
	}
	t.Logf("checked %d package doc comments", len(docs))
}

// TestPackageDocsCatchesLongDoc proves the rule bites: over a synthetic module, a 26-line doc fails
// and a 25-line one passes, in what the go tool skips nothing is read, and a file that does not
// parse is an error.
func TestPackageDocsCatchesLongDoc(t *testing.T) {
	root := t.TempDir()
	write := fileWriter(t, root)
	doc := func(pkg string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "// Package %s is a package.\n", pkg)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "// line %d\n", i+1)
		}
		return b.String() + "package " + pkg + "\n"
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("ok/doc.go", doc("ok", 25))
	write("ok/other.go", "package ok\n")
	write("long/doc.go", doc("long", 26))
	write("block/doc.go", "/*\nPackage block\n"+strings.Repeat("text\n", 23)+"*/\npackage block\n") // 26 lines
	write("tagged/doc.go", "//go:build linux\n\n"+doc("tagged", 25))
	write("testdata/x/doc.go", doc("x", 40))
	write(".tools/x/doc.go", doc("x", 40))
	write(".git/x/doc.go", doc("x", 40))
	write("_skip/doc.go", doc("x", 40))

	docs, err := scanPackageDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	got := longPackageDocs(docs)
	want := []string{"block/doc.go", "long/doc.go"}
	if len(got) != len(want) {
		t.Fatalf("violations = %q, want exactly %q", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) || !strings.Contains(got[i], "26 lines") {
			t.Errorf("violation %d = %q, want %s at 26 lines", i, got[i], w)
		}
	}
	if len(docs) != 4 {
		t.Errorf("found %d package docs, want 4 (ok, long, block, tagged): %+v", len(docs), docs)
	}

	write("broken/broken.go", "// Package broken\npackage\n")
	if _, err := scanPackageDocs(root); err == nil {
		t.Fatal("scanPackageDocs accepted a file it cannot parse")
	}
}

// longPackageDocs returns one message per doc comment over maxPackageDocLines lines.
func longPackageDocs(docs []packageDoc) []string {
	var out []string
	for _, d := range docs {
		if d.lines > maxPackageDocLines {
			out = append(out, fmt.Sprintf("%s: the doc comment of package %s is %d lines, over %d: keep what the package is for, "+
				"its one or two invariants and where the rest is written (docs/design.md, docs/format.md)", d.path, d.pkg, d.lines, maxPackageDocLines))
		}
	}
	return out
}

// scanPackageDocs reads the package doc comment of every Go file under root, skipping the
// directories the go tool skips (testdata, and names starting with "." or "_": .git, .tools).
func scanPackageDocs(root string) ([]packageDoc, error) {
	fset := token.NewFileSet()
	var docs []packageDoc
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse package clause: %w", err)
		}
		if af.Doc == nil {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		lines := fset.Position(af.Doc.End()).Line - fset.Position(af.Doc.Pos()).Line + 1
		docs = append(docs, packageDoc{path: filepath.ToSlash(rel), pkg: af.Name.Name, lines: lines})
		return nil
	})
	slices.SortFunc(docs, func(a, b packageDoc) int { return strings.Compare(a.path, b.path) })
	return docs, err
}
