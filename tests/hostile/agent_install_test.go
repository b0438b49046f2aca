package hostile

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigSettings is a user's Claude Code settings file large enough (about 2 MB) that plan's rewrite
// of it takes a while: a kill lands in the middle of it.
func bigSettings() []byte {
	var b bytes.Buffer
	b.WriteString(`{"model": "opus", "permissions": {"allow": [`)
	for i := 0; i < 30000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"Bash(echo a fairly long allowed command number ` + strings.Repeat("x", 20) + `)"`)
	}
	b.WriteString(`]}, "hooks": {"Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}`)
	return b.Bytes()
}

// plan agent install killed at any moment leaves the user's settings file as it was or fully
// installed, never cut, and never loses the user's own entries; the next install finishes the job
// and removes what the killed ones left beside the file.
func TestAgentInstallKilledLeavesSettingsWhole(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	path := filepath.Join(home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	orig := bigSettings()
	// The fully installed file, made once without a kill, to compare with.
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runPlan(t, "", env, "agent", "install", "claude", "--user", "--bin", "plan"); r.code != 0 {
		t.Fatal(r)
	}
	installed, _ := os.ReadFile(path)
	temp := filepath.Join(filepath.Dir(path), ".settings.json.plan-*")
	n := trials(8)
	finished, whole := 0, 0
	for i := 0; i < n; i++ {
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		p := startPlan(t, "", env, "agent", "install", "claude", "--user", "--bin", "plan")
		// The kill lands while the new file is being written, synced or renamed: once its
		// temporary file appears (or the install ended), after up to 3 ms more.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if m, _ := filepath.Glob(temp); len(m) > 0 {
				break
			}
			select {
			case <-p.done:
			default:
				time.Sleep(200 * time.Microsecond)
				continue
			}
			break
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		r := p.kill(t)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(got, orig):
		case bytes.Equal(got, installed):
			whole++
		default:
			t.Fatalf("trial %d: the settings file is neither the user's nor the installed one (%d bytes; %v)", i, len(got), r)
		}
		if !r.killed {
			finished++
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Fatalf("trial %d: mode %v", i, fi.Mode().Perm())
		}
	}
	t.Logf("%d trials: %d left the file installed, %d finished before the kill", n, whole, finished)
	if r := runPlan(t, "", env, "agent", "install", "claude", "--user", "--bin", "plan"); r.code != 0 {
		t.Fatal(r)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, installed) {
		t.Fatal("the install after the kills did not give the installed file")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("left beside the settings: %v", names)
	}
	var v map[string]any
	if err := json.Unmarshal(installed, &v); err != nil || v["model"] != "opus" {
		t.Fatalf("installed file: %v", err)
	}
}

// Hostile settings files are refused with exit 3 and left byte-identical: nesting deep enough to
// exhaust a recursive parser, a duplicate key hiding a second "hooks", a NUL, a BOM.
func TestAgentInstallRefusesHostileSettings(t *testing.T) {
	for name, body := range map[string]string{
		"deep nesting":   `{"x": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`,
		"duplicate hook": `{"hooks": {}, "hooks": {"Stop": []}}`,
		"NUL":            "{\"a\": \"\x00\"}",
		"BOM":            "\xef\xbb\xbf{}",
		"two documents":  `{} {"hooks": {}}`,
	} {
		home := t.TempDir()
		path := filepath.Join(home, ".claude", "settings.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runPlan(t, "", []string{"HOME=" + home}, "--json", "agent", "install", "claude", "--user")
		if r.code != 3 || r.errorKind() != "invalid" {
			t.Errorf("%s: %v", name, r)
		}
		if got, _ := os.ReadFile(path); string(got) != body {
			t.Errorf("%s: the file changed", name)
		}
	}
}
