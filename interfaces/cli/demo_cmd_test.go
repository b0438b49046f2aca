package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// An interrupted demo stops at the step it was on with the interrupted status, and leaves nothing
// behind in TMPDIR.
func TestDemoInterrupted(t *testing.T) {
	tmp, data := t.TempDir(), ownDataDir(t)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("PLAN_DATA_DIR", data)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := (&Runner{Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader("")}).Run(ctx, []string{"plan", "demo"})
	if code != ExitInterrupted || !strings.Contains(out.String(), "$ plan run plan.yaml\n") || strings.Contains(out.String(), "# 2.") {
		t.Errorf("an interrupted demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the interrupted demo left %d entries in TMPDIR (first %q)", len(left), left[0].Name())
	}
	requireNoHistories(t, data, "the interrupted demo")
}

// hookWriter is the demo's stdout. The demo narrates each step ("$ plan …", "# 4. …") before it
// runs it, so when the narrative reaches trigger the hook can change the workspace under the step.
type hookWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	fired   bool
	hook    func(dir string)
}

var demoDirLine = regexp.MustCompile(`# A workspace in (\S+) with`)

func (w *hookWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := w.buf.Write(p)
	if !w.fired && strings.Contains(w.buf.String(), w.trigger) {
		w.fired = true
		if m := demoDirLine.FindStringSubmatch(w.buf.String()); m != nil {
			w.hook(m[1])
		}
	}
	return n, nil
}

func (w *hookWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func removeAll(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			t.Error(err)
		}
	}
}

// When any step of `plan demo` fails, the demo stops right there: it exits 1 naming the step (or
// the check) that failed, narrates nothing after it, never claims the correction was undone, and
// still removes its temporary workspace.
func TestDemoStopsAtTheFailingStep(t *testing.T) {
	// Losing .plan/ makes the next plan command find no workspace (exit 4): the one whose
	// history the data directory keeps, and says so.
	dropState := func(t *testing.T) func(dir string) {
		return func(dir string) { removeAll(t, filepath.Join(dir, ".plan")) }
	}
	cases := []struct {
		name, trigger string
		hook          func(t *testing.T) func(dir string)
		wantErr       string
		notAfter      string
	}{
		{"dry run", "$ plan correct --decision configure", dropState,
			"demo step `plan correct --decision configure --reason deleted a page and set production --dry-run` exited 4", "# 3."},
		{"correction", "$ plan --json correct", dropState,
			"demo step `plan --json correct --yes --decision configure", "$ plan correction show"},
		{"correction show", "$ plan correction show", dropState,
			"demo step `plan correction show ", "$ plan status"},
		{"status", "$ plan status", dropState, "demo step `plan status` exited 4", "# 4."},
		{"config gone", "$ plan status", func(t *testing.T) func(string) {
			return func(dir string) { removeAll(t, filepath.Join(dir, "site.conf")) }
		}, "/site.conf: no such file or directory", "# 4."},
		{"config still wrong", "$ plan status", func(t *testing.T) func(string) {
			return func(dir string) {
				if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte("env=production\n"), 0o600); err != nil {
					t.Error(err)
				}
			}
		}, "demo: the corrected workspace is not what the corrected plan produces", "# 4."},
		{"page still missing", "$ plan status", func(t *testing.T) func(string) {
			return func(dir string) { removeAll(t, filepath.Join(dir, "out", "pages", "about.html")) }
		}, "demo: the corrected workspace is not what the corrected plan produces", "# 4."},
		{"archive lost", "# 4. Nothing was lost", func(t *testing.T) func(string) {
			return func(dir string) { removeAll(t, stateOf(t, dir).Archive()) }
		}, "demo: archive is missing the wrong config: ", "# 5."},
		{"rollback", "$ plan rollback", dropState,
			"demo step `plan rollback --yes --to-checkpoint ", "$ plan diff"},
		{"diff", "$ plan diff", dropState, "demo step `plan diff ", "# No differences"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp, data := t.TempDir(), ownDataDir(t)
			t.Setenv("TMPDIR", tmp)
			t.Setenv("PLAN_DATA_DIR", data)
			out := &hookWriter{trigger: tc.trigger, hook: tc.hook(t)}
			var errOut bytes.Buffer
			code := (&Runner{Stdout: out, Stderr: &errOut, Stdin: strings.NewReader("")}).Run(t.Context(), []string{"plan", "demo"})
			o := outcome{args: []string{"demo"}, code: code, stdout: out.String(), stderr: errOut.String()}
			if !out.fired {
				t.Fatalf("the narrative never reached %q\n%v", tc.trigger, o)
			}
			if code != ExitInternal || !strings.HasPrefix(o.stderr, "plan: ") || !strings.Contains(o.stderr, tc.wantErr) {
				t.Errorf("want exit 1 and %q on stderr\n%v", tc.wantErr, o)
			}
			// A failed plan command tells why in the narrative, where the user is reading.
			if strings.HasPrefix(tc.wantErr, "demo step") && !strings.Contains(o.stdout, "and its .plan/ is gone; its history is kept in "+data) {
				t.Errorf("the narrative does not say why the step failed\n%v", o)
			}
			if strings.Contains(o.stdout, tc.notAfter) || strings.Contains(o.stdout, "# No differences") {
				t.Errorf("the demo went on after the failed step (%q)\n%v", tc.notAfter, o)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("the failed demo left %d entries in TMPDIR (first %q)", len(left), left[0].Name())
			}
			requireNoHistories(t, data, "the failed demo")
		})
	}
}

// requireNoHistories requires that the data directory data keeps no workspace's history.
func requireNoHistories(t *testing.T, data, what string) {
	t.Helper()
	kept, err := os.ReadDir(filepath.Join(data, "workspaces"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(kept) != 0 {
		t.Errorf("%s left %d histories in the data directory (first %q)", what, len(kept), kept[0].Name())
	}
}

// Built without cgo, the demo says first what to install, not go-sqlite3's stub message midway.
func TestDemoNeedsCgo(t *testing.T) {
	if !cgoBuilt {
		t.Fatal("the tests are built with cgo: the SQLite driver needs it")
	}
	if err := needCgo(true); err != nil {
		t.Fatal(err)
	}
	err := needCgo(false)
	if err == nil || !strings.HasPrefix(err.Error(), "this binary was built without cgo, and plan needs cgo: install a C compiler") {
		t.Fatalf("%v", err)
	}
	if code, _ := exitCode(err); code != ExitInternal {
		t.Fatalf("exit %d", code)
	}
}
