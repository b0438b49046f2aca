package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Every example command of README.md and docs/*.md runs, so that the docs cannot drift from the
// program: each `plan …` of a fenced sh, bash, shell or console block (after a `$ ` prompt, `&&`,
// `||`, `;` or `|`, with VAR=value assignments before it) runs in-process, in the order the page
// gives them, in a workspace of the page's own made as the pages assume one (a file src/main.go,
// three checkpoints, README's plan.yaml and its scripts). A command must be one plan accepts: not a
// usage error (exit 2: an unknown command or flag, a missing or extra argument), which is what
// drift looks like. Its outcome otherwise depends on the page's story (a placeholder such as
// <SESSION> names nothing: exit 3 or 4), so it is not judged. Prompts are answered by --yes, which
// every command gets (there is no terminal), and the other commands of a line (rm, git, go) are the
// reader's shell, not run.
//
// A block that cannot run here is preceded by the marker line
//
//	<!-- docs-test: not run: REASON -->
//
// (an HTML comment: GitHub shows nothing of it): one that needs a network service (an S3 endpoint,
// a PostgreSQL server) or starts one in the background (plan watch). The marker names its reason, and
// a block may hold only the commands that need it.
func TestDocsExamplesRun(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	total := 0
	for _, page := range pages {
		examples, err := docExamples(page)
		if err != nil {
			t.Fatal(err)
		}
		if len(examples) == 0 {
			continue
		}
		dir := docsFixture(t)
		home := t.TempDir()
		for _, ex := range examples {
			total++
			getenv := func(k string) string {
				switch k {
				case "HOME":
					return home
				case "CODEX_HOME", "XDG_CONFIG_HOME":
					return ""
				}
				if v, ok := ex.env[k]; ok {
					return v
				}
				return os.Getenv(k)
			}
			o := invoke(Runner{Dir: dir, Getenv: getenv}, append([]string{"--yes"}, ex.args...)...)
			if testing.Verbose() {
				t.Logf("%s:%d: exit %d: %s", filepath.Base(ex.page), ex.line, o.code, ex.text)
			}
			if o.code == ExitUsage || strings.Contains(o.stderr, "unknown command") || strings.Contains(o.stderr, "unknown flag") {
				t.Errorf("%s:%d: the example %q is not a command plan accepts:\n%v", ex.page, ex.line, ex.text, o)
			}
		}
	}
	t.Logf("%d examples ran", total)
	if total < 30 {
		t.Fatalf("only %d examples found: is the extraction broken?", total)
	}
}

// docExample is one plan command of a page's fenced shell block.
type docExample struct {
	page string
	line int
	text string
	args []string          // after "plan"
	env  map[string]string // VAR=value before it
}

var (
	fenceOpen  = regexp.MustCompile("^\\s*```(\\w*)")
	docsMarker = regexp.MustCompile(`^<!-- docs-test: not run: .+ -->$`)
	shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
)

// docExamples returns the plan commands of page's fenced shell blocks, those of blocks under the
// not-run marker left out.
func docExamples(page string) ([]docExample, error) {
	f, err := os.Open(page) // #nosec G304 -- a page of this repository
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []docExample
	sc := bufio.NewScanner(f)
	in, run, skipNext := false, false, false
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch m := fenceOpen.FindStringSubmatch(line); {
		case !in && m != nil:
			in, run, skipNext = true, shellLangs[m[1]] && !skipNext, false
			continue
		case in && strings.HasPrefix(strings.TrimSpace(line), "```"):
			in = false
			continue
		case !in:
			skipNext = docsMarker.MatchString(strings.TrimSpace(line)) || (skipNext && strings.TrimSpace(line) == "")
			continue
		case !run:
			continue
		}
		for _, words := range shellCommands(line) {
			env := map[string]string{}
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
				k, v, _ := strings.Cut(words[0], "=")
				env[k], words = v, words[1:]
			}
			if len(words) > 0 && words[0] == "plan" {
				out = append(out, docExample{page: page, line: n, text: strings.TrimSpace(line), args: words[1:], env: env})
			}
		}
	}
	return out, sc.Err()
}

// shellCommands splits one shell line into its commands' words, as sh reads them: quotes and
// backslashes, a comment from an unquoted #, commands separated by &&, ||, ; and |; a leading `$ `
// prompt dropped.
func shellCommands(line string) [][]string {
	line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	next := func() {
		end()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	r := []rune(line)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\'':
			inWord = true
			for i++; i < len(r) && r[i] != '\''; i++ {
				word.WriteRune(r[i])
			}
		case c == '"':
			inWord = true
			for i++; i < len(r) && r[i] != '"'; i++ {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				word.WriteRune(r[i])
			}
		case c == '\\' && i+1 < len(r):
			i++
			word.WriteRune(r[i])
			inWord = true
		case c == '#' && !inWord:
			next()
			return cmds
		case c == '&' || c == '|' || c == ';':
			next()
			if i+1 < len(r) && (r[i+1] == '&' || r[i+1] == '|') {
				i++
			}
		case unicode.IsSpace(c):
			end()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	next()
	return cmds
}

// docsFixture is the workspace the pages' examples assume: src/main.go, three checkpoints (so
// @~2 names one), README's plan.yaml with the scripts it runs.
func docsFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "my-workspace")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, dir, "init")
	for i, content := range []string{"package main\n", "package main\n\nfunc main() {}\n", "package main\n\nfunc main() { run() }\n"} {
		writeFile(t, dir, "src/main.go", content)
		writeFile(t, dir, "README.md", strings.Repeat("te"+"h\n", i+1)) // README's sed example fixes this typo
		createCheckpoint(t, dir)
	}
	for name, body := range map[string]string{"scaffold.sh": "echo scaffold > scaffold.txt\n", "configure.sh": "echo \"$@\" > configured.txt\n"} {
		writeFile(t, dir, name, "#!/bin/sh\n"+body)
		if err := os.Chmod(filepath.Join(dir, name), 0o700); err != nil { // #nosec G302 -- a script the plan runs
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "plan.yaml", "name: site\ndecisions:\n  - id: scaffold\n    run: ./scaffold.sh\n"+
		"  - id: configure\n    run: ./configure.sh --prod\n    timeout: 5m\n    env: {MODE: fast}\n")
	return dir
}

func TestShellCommands(t *testing.T) {
	for line, want := range map[string]string{
		`plan init   # a comment`:                                     "[plan init]",
		`$ plan correct --reason "wrong target" --run './c.sh --dev'`: "[plan correct --reason wrong target --run ./c.sh --dev]",
		`rm -rf .plan && plan init`:                                   "[rm -rf .plan] [plan init]",
		`plan undo && plan redo; plan status | less`:                  "[plan undo] [plan redo] [plan status] [less]",
		`PLAN_TIMINGS=1 plan status || echo "a \"quoted\" word"`:      `[PLAN_TIMINGS=1 plan status] [echo a "quoted" word]`,
		`plan cat @ a\ b.txt # not#a-comment-inside`:                  "[plan cat @ a b.txt]",
		`plan diff x#y`: "[plan diff x#y]",
		``:              "",
	} {
		var got []string
		for _, c := range shellCommands(line) {
			got = append(got, "["+strings.Join(c, " ")+"]")
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%q: got %s, want %s", line, g, want)
		}
	}
}
