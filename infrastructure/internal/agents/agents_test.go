package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

func mustLookup(t *testing.T, name string) Agent {
	t.Helper()
	a, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupAndNames(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "claude,codex,gemini" {
		t.Fatalf("Names() = %s", got)
	}
	_, err := Lookup("cursor")
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "claude, codex, gemini") {
		t.Fatalf("Lookup(cursor) = %v", err)
	}
}

func TestFileLocations(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	cases := []struct{ agent, want string }{
		{"claude", "/home/u/.claude/settings.json"},
		{"codex", "/home/u/.codex/hooks.json"},
		{"gemini", "/home/u/.gemini/settings.json"},
	}
	for _, c := range cases {
		got, err := mustLookup(t, c.agent).File(User, "/p", getenv)
		if err != nil || got != c.want {
			t.Fatalf("%s user file = %q, %v; want %q", c.agent, got, err, c.want)
		}
	}
	env["CODEX_HOME"] = "/opt/codex"
	if got, _ := mustLookup(t, "codex").File(User, "/p", getenv); got != "/opt/codex/hooks.json" {
		t.Fatalf("codex with CODEX_HOME = %q", got)
	}
	for agent, want := range map[string]string{"claude": "/p/.claude/settings.json", "codex": "/p/.codex/hooks.json", "gemini": "/p/.gemini/settings.json"} {
		if got, _ := mustLookup(t, agent).File(Project, "/p", getenv); got != want {
			t.Fatalf("%s project file = %q", agent, got)
		}
	}
	_, err := mustLookup(t, "claude").File(User, "/p", func(string) string { return "" })
	if !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("no HOME: %v", err)
	}
}

func TestCommandQuotingAndRecognition(t *testing.T) {
	a := mustLookup(t, "claude")
	if got := a.Command("/usr/bin/plan", "Stop"); got != "/usr/bin/plan hook claude Stop" {
		t.Fatalf("plain: %q", got)
	}
	quoted := a.Command("/opt/my tools/it's/plan", "Stop")
	if quoted != `'/opt/my tools/it'\''s/plan' hook claude Stop` {
		t.Fatalf("quoted: %q", quoted)
	}
	for _, c := range []struct {
		cmd, event string
		want       bool
	}{
		{quoted, "Stop", true},
		{"plan hook claude Stop", "Stop", true},
		{"  plan   hook claude Stop ", "Stop", true},
		{"plan hook claude Stop", "SessionEnd", false},
		{"plan hook codex Stop", "Stop", false},
		{"plan hook claude Stop --x", "Stop", false},
		{"plan", "Stop", false},
		{"'unterminated hook claude Stop", "Stop", false},
		{"'/a'\\''b' hook claude Stop", "Stop", true},
		{"echo hook claude", "Stop", false},
		{"", "Stop", false},
	} {
		if got := a.ours(c.cmd, c.event); got != c.want {
			t.Errorf("ours(%q, %s) = %v", c.cmd, c.event, got)
		}
	}
	if got := shellQuote(""); got != "''" {
		t.Fatalf("empty quote: %q", got)
	}
}

const userSettings = `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh", "timeout": 1.50}]}
    ],
    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
  },
  "permissions": {"allow": ["Bash(ls)"], "deny": []},
  "n": 1e3,
  "html": "<a&b>",
  "on": true,
  "off": null
}
`

func TestInstallMergesKeepsOthersAndIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")
	writeFile(t, path, userSettings, 0o640)
	a := mustLookup(t, "claude")
	res, err := a.Install(path, "/bin/plan")
	if err != nil || !res.Changed || res.Created {
		t.Fatalf("install: %+v %v", res, err)
	}
	first := readFile(t, path)
	for _, want := range []string{`"model": "opus"`, `"command": "lint.sh"`, `"timeout": 1.50`, `"n": 1e3`, `"html": "<a&b>"`,
		`"notify-send hi"`, `"/bin/plan hook claude PreToolUse"`, `"/bin/plan hook claude SessionEnd"`, `"matcher": "Edit|Write|MultiEdit|NotebookEdit|Bash"`,
		`"off": null`, `"deny": []`} {
		if !strings.Contains(first, want) {
			t.Fatalf("installed file lacks %s:\n%s", want, first)
		}
	}
	if strings.Index(first, `"model"`) > strings.Index(first, `"hooks"`) || strings.Index(first, `"hooks"`) > strings.Index(first, `"permissions"`) {
		t.Fatalf("key order changed:\n%s", first)
	}
	if strings.Index(first, "lint.sh") > strings.Index(first, "hook claude PreToolUse") {
		t.Fatalf("plan's entry not after the user's:\n%s", first)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	res, err = a.Install(path, "/bin/plan")
	if err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	if readFile(t, path) != first {
		t.Fatal("second install changed the file")
	}
	st, err := a.Inspect(path, Project)
	if err != nil || st.State != "installed" || len(st.Installed) != 5 || len(st.Missing) != 0 || st.Commands[0] != "/bin/plan hook claude PreToolUse" || !st.Exists {
		t.Fatalf("status: %+v %v", st, err)
	}
	// A moved binary: install again rewrites plan's entries and only them.
	if res, err = a.Install(path, "/new/plan"); err != nil || !res.Changed {
		t.Fatalf("reinstall: %+v %v", res, err)
	}
	again := readFile(t, path)
	if strings.Contains(again, "/bin/plan") || strings.Count(again, "/new/plan hook claude") != 5 {
		t.Fatalf("reinstall:\n%s", again)
	}
	res, err = a.Uninstall(path)
	if err != nil || !res.Changed {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	after := readFile(t, path)
	if strings.Contains(after, "hook claude") || strings.Contains(after, "Stop") || !strings.Contains(after, "lint.sh") || !strings.Contains(after, "notify-send") {
		t.Fatalf("uninstall left:\n%s", after)
	}
	if res, err = a.Uninstall(path); err != nil || res.Changed {
		t.Fatalf("second uninstall: %+v %v", res, err)
	}
	st, _ = a.Inspect(path, Project)
	if st.State != "absent" || len(st.Missing) != 5 {
		t.Fatalf("status after uninstall: %+v", st)
	}
}

func TestInstallCreatesAndUninstallEmpties(t *testing.T) {
	for _, name := range Names() {
		a := mustLookup(t, name)
		path, _ := a.File(Project, t.TempDir(), os.Getenv)
		res, err := a.Install(path, "plan")
		if err != nil || !res.Created || !res.Changed {
			t.Fatalf("%s install: %+v %v", name, res, err)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s mode %v", name, fi.Mode())
		}
		for _, h := range a.Hooks {
			if !strings.Contains(readFile(t, path), `"plan hook `+name+` `+h.Event+`"`) {
				t.Fatalf("%s lacks %s", name, h.Event)
			}
		}
		if _, err := a.Uninstall(path); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != "{}\n" {
			t.Fatalf("%s after uninstall: %q", name, got)
		}
	}
	a := mustLookup(t, "gemini")
	missing := filepath.Join(t.TempDir(), "nope", "settings.json")
	if res, err := a.Uninstall(missing); err != nil || res.Changed {
		t.Fatalf("uninstall of a missing file: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("uninstall created a directory")
	}
	st, err := a.Inspect(missing, User)
	if err != nil || st.Exists || st.State != "absent" {
		t.Fatalf("status of a missing file: %+v %v", st, err)
	}
}

func TestEmptyFileIsAnEmptyObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	writeFile(t, path, " \n", 0o600)
	if _, err := mustLookup(t, "claude").Install(path, "plan"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readFile(t, path), "plan hook claude Stop") {
		t.Fatal("not installed")
	}
}

func TestPartialAndMixedGroups(t *testing.T) {
	a := mustLookup(t, "claude")
	path := filepath.Join(t.TempDir(), "settings.json")
	// Plan's Stop entry shares a group with the user's; PreToolUse has two of plan's entries; a
	// group has no hooks at all; another event of another agent's plan hook is the user's.
	writeFile(t, path, `{"hooks": {
 "Stop": [{"hooks": [{"type": "command", "command": "say done"}, {"type": "command", "command": "plan hook claude Stop"}]}],
 "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "plan hook claude PreToolUse"}]},
                {"matcher": "Edit", "hooks": [{"type": "command", "command": "plan hook claude PreToolUse"}]},
                {"matcher": "X"}],
 "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "plan hook gemini PostToolUse"}, {"type": "other"}]}],
 "enabled": true
}}`, 0o644)
	st, err := a.Inspect(path, Project)
	if err != nil || st.State != "partial" || strings.Join(st.Installed, ",") != "PreToolUse,Stop" {
		t.Fatalf("status: %+v %v", st, err)
	}
	if _, err := a.Install(path, "plan"); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if strings.Count(got, "plan hook claude PreToolUse") != 1 || !strings.Contains(got, `"say done"`) || !strings.Contains(got, `"matcher": "X"`) ||
		!strings.Contains(got, "plan hook gemini PostToolUse") || !strings.Contains(got, `"enabled": true`) {
		t.Fatalf("install:\n%s", got)
	}
	if st, _ := a.Inspect(path, Project); st.State != "installed" {
		t.Fatalf("after install: %+v", st)
	}
	if _, err := a.Uninstall(path); err != nil {
		t.Fatal(err)
	}
	got = readFile(t, path)
	if strings.Contains(got, "hook claude") || !strings.Contains(got, `"say done"`) || !strings.Contains(got, `"matcher": "X"`) {
		t.Fatalf("uninstall:\n%s", got)
	}
}

func TestMalformedSettingsAreRefusedUntouched(t *testing.T) {
	a := mustLookup(t, "claude")
	for name, body := range map[string]string{
		"not json":         `{"hooks": `,
		"comments":         "// mine\n{}",
		"array":            `[]`,
		"trailing":         `{} {}`,
		"duplicate":        `{"a": 1, "a": 2}`,
		"nested duplicate": `{"hooks": {"Stop": [], "Stop": []}}`,
		"hooks string":     `{"hooks": "x"}`,
		"event not list":   `{"hooks": {"Stop": {}}}`,
		"group not object": `{"hooks": {"Notification": [3]}}`,
		"entries not list": `{"hooks": {"Notification": [{"hooks": {}}]}}`,
		"entry not object": `{"hooks": {"Notification": [{"hooks": ["x"]}]}}`,
		"bad in array":     `{"x": [1, }`,
		"bad in value":     `{"x": }`,
		"bad key":          `{"x" 1}`,
		"number key":       `{1: 2}`,
		"too deep":         strings.Repeat("[", 300) + strings.Repeat("]", 300),
		"unclosed object":  `{"x": 1`,
		"unclosed array":   `{"x": [1`,
	} {
		path := filepath.Join(t.TempDir(), "settings.json")
		writeFile(t, path, body, 0o644)
		before, _ := os.Stat(path)
		for op, run := range map[string]func() error{
			"install":   func() error { _, err := a.Install(path, "plan"); return err },
			"uninstall": func() error { _, err := a.Uninstall(path); return err },
			"status":    func() error { _, err := a.Inspect(path, Project); return err },
		} {
			err := run()
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %s = %v", name, op, err)
			}
			if readFile(t, path) != body {
				t.Errorf("%s: %s changed the file", name, op)
			}
		}
		after, _ := os.Stat(path)
		if !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("%s: file rewritten", name)
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Errorf("%s: left %d files", name, len(entries))
		}
	}
}

func TestSymlinkedSettingsAreWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "claude.json")
	writeFile(t, real, `{"model": "x"}`, 0o600)
	link := filepath.Join(dir, "proj", ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	a := mustLookup(t, "claude")
	if _, err := a.Install(link, "plan"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	if !strings.Contains(readFile(t, real), "plan hook claude Stop") {
		t.Fatal("the file the link names was not written")
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// A dangling relative link: the file it names is created.
	dangling := filepath.Join(dir, "proj2", "settings.json")
	if err := os.MkdirAll(filepath.Dir(dangling), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere.json", dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(dangling, "plan"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "proj2", "elsewhere.json")), "plan hook claude") {
		t.Fatal("dangling link target not created")
	}
}

func TestUnreadableAndUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: permission checks do not apply; only the non-permission failures are checked")
	}
	a := mustLookup(t, "claude")
	dir := t.TempDir()
	// A directory where the file should be.
	path := filepath.Join(dir, "settings.json")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(path, "plan"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	if _, err := a.Inspect(path, Project); err == nil {
		t.Fatal("status of a directory")
	}
	// A parent that is a file: the directory cannot be created.
	blocker := filepath.Join(dir, "blocker")
	writeFile(t, blocker, "x", 0o644)
	if _, err := a.Install(filepath.Join(blocker, "sub", "settings.json"), "plan"); err == nil {
		t.Fatal("install under a file")
	}
	// A dangling link in the middle of the path: the directory cannot be made.
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(filepath.Join(dir, "dangling", "sub", "settings.json"), "plan"); err == nil || !strings.Contains(err.Error(), "create ") {
		t.Fatalf("install under a dangling link: %v", err)
	}
	// A dangling link to where no file can be made (/proc): the write fails, nothing is left.
	proc := filepath.Join(dir, "proc-link")
	if err := os.Symlink("/proc/plan-agents-test.json", proc); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(proc, "plan"); err == nil {
		t.Fatal("install into /proc")
	}
	// A link loop cannot be resolved.
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install(loop, "plan"); err == nil {
		t.Fatal("install through a link loop")
	}
	if _, err := a.Inspect(loop, Project); err == nil {
		t.Fatal("status through a link loop")
	}
	// A dangling link whose target cannot be read back.
	if _, err := resolve(filepath.Join(dir, "missing", "x")); err != nil {
		t.Fatalf("resolve of a missing path: %v", err)
	}
}

func TestWriteAtomicFailures(t *testing.T) {
	dir := t.TempDir()
	if err := writeAtomic(filepath.Join(dir, "nodir", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing directory")
	}
	// Renaming over a non-empty directory fails; the temporary file is removed.
	target := filepath.Join(dir, "d")
	writeFile(t, filepath.Join(target, "inside"), "x", 0o644)
	if err := writeAtomic(target, []byte("x"), 0o644); err == nil {
		t.Fatal("rename over a directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left %d entries", len(entries))
	}
}

func TestReport(t *testing.T) {
	a := mustLookup(t, "codex")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, "{", 0o644)
	if st := a.Report(bad, User); st.State != "invalid" || !strings.Contains(st.Error, "not valid JSON") {
		t.Fatalf("malformed: %+v", st)
	}
	if st := a.Report(dir, User); st.State != "unreadable" || st.Error == "" {
		t.Fatalf("directory: %+v", st)
	}
	good := filepath.Join(dir, "hooks.json")
	if _, err := a.Install(good, "plan"); err != nil {
		t.Fatal(err)
	}
	if st := a.Report(good, User); st.State != "installed" || st.Error != "" {
		t.Fatalf("installed: %+v", st)
	}
}

func TestLeftoversOfAKilledWriteAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	writeFile(t, filepath.Join(dir, ".settings.json.plan-123"), "half", 0o600)
	writeFile(t, filepath.Join(dir, ".other.json.plan-1"), "not ours", 0o600)
	if _, err := mustLookup(t, "claude").Install(path, "plan"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != ".other.json.plan-1,settings.json" {
		t.Fatalf("left: %v", names)
	}
}
